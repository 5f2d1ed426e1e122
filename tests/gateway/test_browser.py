"""The browser tests' rule (`browser.py`): skipped without Chromium, failed under CI.

Each case runs the rule against a PATH of its own: an empty directory, or one holding
a stand-in `chromium` (an executable script; nothing runs it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gateway.browser import find_chromium, require_chromium


@pytest.fixture
def empty_bin(tmp_path: Path) -> Path:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    return empty


@pytest.fixture
def chromium_bin(tmp_path: Path) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "chromium"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    return bindir


def outcome(environ: dict[str, str]) -> str | BaseException:
    """Chromium's path, or the skip or failure the rule raised. (Caught, not let through:
    a skip escaping `pytest.raises(...)` would skip this test instead of failing it.)"""
    try:
        return require_chromium(environ)
    except (pytest.fail.Exception, pytest.skip.Exception) as exc:
        return exc


def test_without_chromium_the_tests_fail_under_ci(empty_bin: Path) -> None:
    failed = outcome({"PATH": str(empty_bin), "CI": "true"})
    assert isinstance(failed, pytest.fail.Exception), failed
    assert "CI must be able to run the browser tests: no browser" in str(failed)


def test_without_chromium_the_tests_are_skipped_elsewhere(empty_bin: Path) -> None:
    skipped = outcome({"PATH": str(empty_bin)})
    assert isinstance(skipped, pytest.skip.Exception), skipped
    assert "no browser" in str(skipped)


def test_chromium_on_path_is_used_with_or_without_ci(chromium_bin: Path) -> None:
    """The control: the same lookup with a chromium on PATH neither fails nor skips."""
    expected = str(chromium_bin / "chromium")
    assert outcome({"PATH": str(chromium_bin), "CI": "true"}) == expected
    assert outcome({"PATH": str(chromium_bin)}) == expected


def test_a_file_that_cannot_run_is_no_browser(chromium_bin: Path) -> None:
    (chromium_bin / "chromium").chmod(0o644)
    assert find_chromium(str(chromium_bin)) is None
    assert isinstance(outcome({"PATH": str(chromium_bin), "CI": "1"}), pytest.fail.Exception)
