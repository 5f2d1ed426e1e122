"""Checks on request params the schema alone cannot express (seed C.2, C.7)."""

from __future__ import annotations

from pathlib import Path

from agentao.protocol.errors import InvalidParams


def directory(path: str, field: str) -> Path:
    """`path` if it is an absolute path to an existing directory, else -32602."""
    p = Path(path)
    if not path or not p.is_absolute():
        raise _bad(field, f"must be an absolute path, got {path!r}")
    if not p.exists():
        raise _bad(field, f"does not exist: {path}")
    if not p.is_dir():
        raise _bad(field, f"is not a directory: {path}")
    return p


def directories(paths: list[str] | None, field: str) -> tuple[Path, ...]:
    return tuple(directory(p, f"{field}[{i}]") for i, p in enumerate(paths or []))


def _bad(field: str, problem: str) -> InvalidParams:
    return InvalidParams(f"Invalid params: {field} {problem}", {"field": field})


__all__ = ["directories", "directory"]
