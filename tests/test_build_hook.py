"""hatch_build.py: the web UI's bundle is rebuilt when it is missing or older than its
sources, and a machine without npm gets a clear error instead of a package with no UI."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def load_hook() -> ModuleType:
    # hatch_build.py sits next to pyproject.toml, outside the package: load it by path.
    spec = importlib.util.spec_from_file_location("hatch_build", ROOT / "hatch_build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def touch(path: Path, mtime: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x")
    os.utime(path, (mtime, mtime))


def test_a_missing_or_older_bundle_is_stale(tmp_path: Path) -> None:
    hook = load_hook()
    touch(tmp_path / "webui" / "src" / "main.js", 1000)
    assert hook.stale(tmp_path)  # never built
    for name in hook.BUNDLE_FILES:
        touch(tmp_path / hook.BUNDLE / name, 2000)
    assert not hook.stale(tmp_path)
    touch(tmp_path / "webui" / "package-lock.json", 3000)  # a library was updated
    assert hook.stale(tmp_path)


def test_without_npm_the_build_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook = load_hook()
    monkeypatch.setenv("PATH", str(tmp_path))  # a PATH with no npm on it
    with pytest.raises(RuntimeError, match="needs npm") as raised:
        hook.build(tmp_path)
    assert "apt-get install npm" in str(raised.value)


def test_the_installed_package_carries_the_bundle() -> None:
    from agentao.gateway import web

    assert (web.BUNDLE / "app.js").stat().st_size > 0
    assert (web.BUNDLE / "app.css").stat().st_size > 0
