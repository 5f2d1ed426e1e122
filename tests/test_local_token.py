"""The local token file (`agentao/local_token.py`): made once 0600, trusted only as such."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from agentao.local_token import (
    TOKEN_FILE_NAME,
    LocalTokenError,
    ensure_token,
    is_loopback_url,
    read_token,
    token_for_url,
)

NOBODY = 65534


def test_the_token_is_made_once_0600_and_then_reused(tmp_path: Path) -> None:
    old_umask = os.umask(0o000)  # a careless umask changes nothing
    try:
        token = ensure_token(tmp_path)
    finally:
        os.umask(old_umask)
    info = (tmp_path / TOKEN_FILE_NAME).stat()
    assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == os.geteuid()
    assert len(token) >= 43  # token_urlsafe(32)
    assert ensure_token(tmp_path) == token
    assert os.listdir(tmp_path) == [TOKEN_FILE_NAME]  # no temporary file left behind


def test_gateways_starting_together_agree_on_one_token(tmp_path: Path) -> None:
    barrier, tokens = threading.Barrier(8), []

    def start() -> None:
        barrier.wait()
        tokens.append(ensure_token(tmp_path))

    threads = [threading.Thread(target=start) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(tokens)) == 1 and len(tokens) == 8


def _planted(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / TOKEN_FILE_NAME
    if kind == "readable by others":
        path.write_text("a-token\n")
        path.chmod(0o644)
    elif kind == "a symlink":
        (tmp_path / "target").write_text("a-token\n")
        (tmp_path / "target").chmod(0o600)
        path.symlink_to(tmp_path / "target")
    elif kind == "a FIFO":
        os.mkfifo(path, 0o600)
    elif kind == "a directory":
        path.mkdir(mode=0o700)
    elif kind == "empty":
        path.touch(mode=0o600)
    elif kind == "another user's":
        if os.geteuid() != 0:
            pytest.skip("only root can give a file to another user")
        path.write_text("planted-by-nobody\n")
        path.chmod(0o600)
        os.chown(path, NOBODY, NOBODY)
    return path


@pytest.mark.parametrize(
    "kind",
    ["readable by others", "a symlink", "a FIFO", "a directory", "empty", "another user's"],
)
def test_a_token_file_that_cannot_be_trusted_is_refused_with_its_name(
    tmp_path: Path, kind: str
) -> None:
    path = _planted(tmp_path, kind)
    with pytest.raises(LocalTokenError, match=str(path)):  # never blocks, even on a FIFO
        ensure_token(tmp_path)
    with pytest.raises(LocalTokenError):
        token_for_url("http://127.0.0.1:8765/acp", tmp_path)


def test_a_good_file_is_read_and_control(tmp_path: Path) -> None:
    path = tmp_path / TOKEN_FILE_NAME
    path.write_text("the-token\n")
    path.chmod(0o600)
    assert read_token(path) == "the-token"
    assert ensure_token(tmp_path) == "the-token"


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://127.0.0.1:8765/acp", True),
        ("ws://localhost:8765/acp", True),
        ("http://[::1]:8765/acp", True),
        ("http://127.9.9.9/acp", True),
        ("https://gateway.example/acp", False),
        ("http://10.0.0.1:8765/acp", False),
        ("http://127.0.0.1.evil.example/acp", False),
        ("http://[::1/acp", False),  # unparseable: not loopback
    ],
)
def test_only_loopback_urls_get_the_token(tmp_path: Path, url: str, loopback: bool) -> None:
    token = ensure_token(tmp_path)
    assert is_loopback_url(url) is loopback
    assert token_for_url(url, tmp_path) == (token if loopback else None)


def test_no_file_no_token(tmp_path: Path) -> None:
    assert token_for_url("http://127.0.0.1:1/acp", tmp_path) is None
