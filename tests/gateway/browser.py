"""Whether the web UI's browser tests can run here: Chromium on PATH, and Playwright.

The rule is tests/conftest.py's for the sandbox and PostgreSQL: where the browser is
missing the tests are skipped, except under CI (`CI` set: `.ci/run` installs chromium),
where a missing browser fails them, so a CI run never passes by skipping them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from importlib.util import find_spec
from typing import NoReturn

import pytest

CHROMIUM_NAMES = ("chromium", "chromium-browser")  # Debian's name, then other distributions'


def find_chromium(path: str) -> str | None:
    """The first Chromium executable on `path` (a PATH value), or None."""
    for name in CHROMIUM_NAMES:
        if found := shutil.which(name, path=path):
            return found
    return None


def missing_browser(path: str) -> str | None:
    """Why the browser tests cannot run with this PATH (None: they can)."""
    if find_spec("playwright") is None:
        return "no Playwright: pip install -e '.[test]'"
    if find_chromium(path) is None:
        return f"no browser: none of {', '.join(CHROMIUM_NAMES)} on PATH (apt-get install chromium)"
    return None


def require_chromium(environ: Mapping[str, str] = os.environ) -> str:
    """Chromium's path; without it the test is skipped, or fails under CI."""
    path = environ.get("PATH", "")
    reason = missing_browser(path)
    if reason is not None:
        unavailable(reason, environ)
    found = find_chromium(path)
    assert found is not None
    return found


def unavailable(reason: str, environ: Mapping[str, str]) -> NoReturn:
    """Skip for want of `reason`, except under CI, where it is a failure."""
    if environ.get("CI"):
        pytest.fail(f"CI must be able to run the browser tests: {reason}")
    pytest.skip(reason)


__all__ = ["CHROMIUM_NAMES", "find_chromium", "missing_browser", "require_chromium"]
