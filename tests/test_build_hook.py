"""hatch_build.py: the web UI's bundle is rebuilt when it is missing or older than its
sources, and a machine without npm gets a clear error instead of a package with no UI."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

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


def test_without_npm_pip_ends_with_one_line_saying_what_to_install(tmp_path: Path) -> None:
    """A real `pip wheel` of a checkout with no bundle, on a PATH with no npm: the hook's
    output is one line naming npm and how to install it, not a traceback of the hook."""
    hook = load_hook()
    checkout = tmp_path / "checkout"
    for name in ("pyproject.toml", "hatch_build.py", "README.md"):
        checkout.mkdir(exist_ok=True)
        shutil.copy(ROOT / name, checkout / name)
    ignore = shutil.ignore_patterns("node_modules", "dist", "__pycache__")
    shutil.copytree(ROOT / "webui", checkout / "webui", ignore=ignore)
    shutil.copytree(ROOT / "src", checkout / "src", ignore=ignore)
    python_only = str(Path(sys.executable).parent)  # the venv's python and pip, no npm
    assert shutil.which("npm", path=python_only) is None
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index"]
    built = subprocess.run(
        [*pip, "-w", str(tmp_path / "out"), str(checkout)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PATH": python_only},
    )
    output = built.stdout + built.stderr
    assert built.returncode != 0
    assert "[1 lines of output]" in output and hook.NO_NPM in output, output
    assert "Traceback" not in output and "apt-get install npm" in hook.NO_NPM


def test_the_installed_package_carries_the_bundle() -> None:
    from agentao.gateway import web

    assert (web.BUNDLE / "app.js").stat().st_size > 0
    assert (web.BUNDLE / "app.css").stat().st_size > 0
