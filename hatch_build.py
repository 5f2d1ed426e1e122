"""Build the web UI's bundle when a wheel (or an editable install) is built.

The gateway's web UI is written in `webui/src/` and uses npm packages (marked, DOMPurify,
highlight.js) pinned in `webui/package-lock.json`; esbuild bundles them into
`src/agentao/gateway/web/dist/`, which git ignores. So `pip install .` and
`pip install -e .` run `npm ci && npm run build` here whenever the bundle is missing or
older than its sources. Without npm the build stops with one line saying what to install
(`NO_NPM`, raised as SystemExit: pip then shows that line, not a traceback of this hook). A
source distribution carries the built bundle, so installing from one needs no npm.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

WEBUI = "webui"
BUNDLE = "src/agentao/gateway/web/dist"
BUNDLE_FILES = ("app.js", "app.css")
SOURCES = ("src", "package.json", "package-lock.json", "build.mjs")
NO_NPM = (
    "error: building agentao's web UI needs npm (Node.js 18+), which is not installed: "
    "install it (Debian/Ubuntu: apt-get install npm) and build again, or install from a "
    "source distribution, which carries the built bundle"
)


class WebBundleHook(BuildHookInterface):
    PLUGIN_NAME = "web-bundle"

    def initialize(self, version: str, build_data: dict) -> None:
        root = Path(self.root)
        if (root / WEBUI).is_dir() and stale(root):
            build(root / WEBUI)
        missing = [f for f in BUNDLE_FILES if not (root / BUNDLE / f).is_file()]
        if missing:
            raise RuntimeError(f"the web UI bundle is missing {missing} in {BUNDLE}")
        # Git ignores the bundle; artifacts are packaged all the same.
        build_data["artifacts"].extend(f"{BUNDLE}/{f}" for f in BUNDLE_FILES)


def stale(root: Path) -> bool:
    """Is a bundle file missing, or older than any of the web UI's sources?"""
    outputs = [root / BUNDLE / f for f in BUNDLE_FILES]
    if not all(p.is_file() for p in outputs):
        return True
    built = min(p.stat().st_mtime for p in outputs)
    return any(p.stat().st_mtime > built for p in _sources(root / WEBUI))


def _sources(webui: Path) -> list[Path]:
    found: list[Path] = []
    for name in SOURCES:
        path = webui / name
        if path.is_dir():
            found.extend(p for p in path.rglob("*") if p.is_file())
        elif path.is_file():
            found.append(path)
    return found


def build(webui: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:  # the one line pip shows, with no traceback above it
        raise SystemExit(NO_NPM)
    for step in ([npm, "ci", "--no-audit", "--no-fund"], [npm, "run", "build"]):
        done = subprocess.run(step, cwd=webui, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(
                f"`{' '.join(step[1:])}` in {webui} failed ({done.returncode}):\n"
                f"{done.stdout[-4000:]}{done.stderr[-4000:]}"
            )
