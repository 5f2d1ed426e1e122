"""Path resolution units, and the file escape corpus (tests/data/escape_corpus.json).

Each corpus case runs the real tool through the real permission engine under
workspace-write, the way the turn loop does: decide; on "ask" the human (a test
double) rejects; on "allow" the tool runs (a shell command in the real sandbox). An escape is any change outside the
workspace, or an outside secret in a tool's output. The corpus must show 0.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from agentao.agent.local_env import LocalEnv
from agentao.agent.paths import (
    PathAccess,
    PathError,
    check_pin,
    glob_base,
    is_inside,
    pin,
    resolve,
    validate,
)
from agentao.agent.permissions import PermissionEngine
from agentao.agent.roots import Roots
from agentao.agent.sandbox import Sandbox
from agentao.agent.tools.base import ToolContext, ToolError
from agentao.agent.tools.registry import builtin_tools
from tests.agent.doubles import Nobody

CORPUS = json.loads((Path(__file__).parent.parent / "data" / "escape_corpus.json").read_text())
SECRETS = ("TOP-SECRET", "EVIL-SECRET", "root:x:0:0")
SENTINELS = (
    Path("/etc/agentao-escape-test"),
    Path.home() / "agentao-escape-test",
    Path.cwd() / "pwned-agentao-escape.txt",
)
TOOLS = {t.name: t for t in builtin_tools()}


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    return make_layout(tmp_path)


def make_layout(tmp_path: Path) -> dict[str, Path]:
    base = Path(os.path.realpath(tmp_path))
    ws, out, evil = base / "ws", base / "out", base / "ws-evil"
    (ws / "sub").mkdir(parents=True)
    (ws / "a.txt").write_text("hello\n")
    out.mkdir()
    (out / "secret.txt").write_text("TOP-SECRET\n")
    evil.mkdir()
    (evil / "secret.txt").write_text("EVIL-SECRET\n")
    return {"base": base, "ws": ws, "out": out}


def fill(value: Any, layout: dict[str, Path]) -> Any:
    if isinstance(value, str):
        return value.replace("{ws}", str(layout["ws"])).replace("{out}", str(layout["out"]))
    if isinstance(value, dict):
        return {k: fill(v, layout) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, layout) for v in value]
    return value


def apply(actions: list[list[str]], ws: Path) -> None:
    for action, path, *rest in actions:
        p = Path(path) if os.path.isabs(path) else ws / path
        if action == "symlink":
            p.symlink_to(rest[0])
        elif action == "hardlink":
            os.link(rest[0], p)
        elif action == "mkdir":
            p.mkdir(parents=True)
        else:
            raise AssertionError(f"unknown setup action {action}")


def outside_state(layout: dict[str, Path]) -> dict[str, str]:
    """Everything outside the workspace that an escape could touch, as comparable data."""
    state: dict[str, str] = {}
    ws = layout["ws"]
    for dirpath, dirnames, filenames in os.walk(layout["base"]):
        if Path(dirpath) == layout["base"]:
            dirnames[:] = [d for d in dirnames if Path(dirpath, d) != ws]
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            if p.is_symlink():
                state[str(p)] = "-> " + os.readlink(p)
            elif p.is_file():
                state[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                state[str(p)] = "dir"
    for sentinel in SENTINELS:
        state[str(sentinel)] = str(sentinel.exists())
    return state


async def run_case(
    case: dict[str, Any], layout: dict[str, Path], sandbox: Sandbox
) -> tuple[str, bool]:
    """(outcome as in the corpus' `expect`, whether it escaped) for one corpus case."""
    ws = layout["ws"]
    apply(fill(case.get("setup", []), layout), ws)
    before = outside_state(layout)
    outcome, output = await _decide_and_run(case, layout, sandbox)
    escaped = outside_state(layout) != before or any(s in output for s in SECRETS)
    return outcome, escaped


async def _decide_and_run(
    case: dict[str, Any], layout: dict[str, Path], sandbox: Sandbox
) -> tuple[str, str]:
    ws = layout["ws"]
    tool, args = TOOLS[case["tool"]], fill(case["args"], layout)
    human = Nobody()
    ctx = ToolContext(ws, LocalEnv(sandbox=sandbox), human, workspace=(ws,), call_id=case["id"])
    engine = PermissionEngine("workspace-write", sandbox=sandbox.status())
    decision = engine.decide(tool, args, ctx)
    ctx.confinement = decision.confinement  # as the turn loop does
    apply(fill(case.get("after_decide", []), layout), ws)
    if decision.verdict == "deny":
        assert decision.reason
        return "deny", ""
    if decision.verdict == "ask":
        assert await human.request_permission(object()) == "reject"
        return "ask", ""
    try:
        result = await tool.run(args, ctx)
    except ToolError as e:
        return "tool-error", str(e)
    return ("allow" if case["id"].startswith("legit") else "contained"), result.model_text


def test_corpus_is_big_enough() -> None:
    attacks = [c for c in CORPUS["cases"] if not c["id"].startswith("legit")]
    assert len(attacks) >= 30
    assert len({c["id"] for c in CORPUS["cases"]}) == len(CORPUS["cases"])
    assert {c["expect"] for c in CORPUS["cases"]} <= {
        "deny",
        "ask",
        "tool-error",
        "contained",
        "allow",
    }


@pytest.mark.parametrize("case", CORPUS["cases"], ids=[c["id"] for c in CORPUS["cases"]])
async def test_escape_corpus(
    case: dict[str, Any], layout: dict[str, Path], sandbox: Sandbox
) -> None:
    outcome, escaped = await run_case(case, layout, sandbox)
    assert not escaped, f"ESCAPE: {case['id']}"
    assert outcome == case["expect"], f"{case['id']}: {outcome}"


async def test_corpus_totals_zero_escapes(tmp_path: Path, sandbox: Sandbox) -> None:
    """All cases in one run, for the report: N attacks, 0 escapes."""
    escapes, refused = [], 0
    for i, case in enumerate(CORPUS["cases"]):
        base = tmp_path / str(i)
        base.mkdir()
        outcome, escaped = await run_case(case, make_layout(base), sandbox)
        if escaped:
            escapes.append(case["id"])
        refused += outcome in ("deny", "ask", "tool-error")
    assert escapes == []
    assert refused == sum(c["expect"] in ("deny", "ask", "tool-error") for c in CORPUS["cases"])


# --- units --------------------------------------------------------------------


def test_resolve_follows_links_in_order(tmp_path: Path) -> None:
    base = Path(os.path.realpath(tmp_path))
    (base / "out" / "deep").mkdir(parents=True)
    (base / "ws").mkdir()
    (base / "ws" / "link").symlink_to(base / "out" / "deep")
    assert resolve("link/../x", base / "ws") == base / "out" / "x"
    assert resolve("link", base / "ws", "relink") == base / "ws" / "link"
    assert resolve("link/..", base / "ws", "relink") == base / "out"
    assert resolve("~", base) == Path(os.path.realpath(Path.home()))


def test_is_inside_is_by_component(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    roots = Roots.pin(tmp_path / "ws").paths
    assert is_inside(roots[0] / "a", roots)
    assert is_inside(roots[0], roots)
    assert not is_inside(Path(str(roots[0]) + "-evil"), roots)


@pytest.mark.parametrize(
    ("pattern", "base"),
    [("*.py", "."), ("src/**/*.py", "src"), ("../../etc/*", "../../etc"), ("/etc/*", "/etc"),
     ("a/b/c.txt", "a/b"), ("/x", "/")],
)  # fmt: skip
def test_glob_base(pattern: str, base: str) -> None:
    assert glob_base(pattern) == base


@pytest.mark.parametrize("bad", ["", "a\0b", "a/" * 3000, "x" * 256])
def test_validate(bad: str) -> None:
    with pytest.raises(PathError):
        validate(bad)


def test_pins_detect_a_changed_path(tmp_path: Path) -> None:
    state: dict[str, Any] = {}
    access = PathAccess("f", "write")
    pin(state, "call-1", {access: tmp_path / "f"})
    check_pin(state, "call-1", access, tmp_path / "f")
    check_pin(state, "call-2", access, tmp_path / "elsewhere")  # other call: no pin
    with pytest.raises(PathError, match="changed after the permission check"):
        check_pin(state, "call-1", access, tmp_path / "elsewhere")
    for i in range(100):
        pin(state, f"c{i}", {})
    assert len(state["agentao.paths.pins"]) <= 64
