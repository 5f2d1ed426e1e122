"""The keyless gateway's local token: a secret in a 0600 file of the user's state directory.

A leaf module outside the layers, because two of them need it: the gateway (`serve`
makes the token and checks it) and the command's clients (`agentao run`, `connect`,
`doctor` read it for a gateway on this machine), and the client layer may not import
the gateway's. Callers pass the state directory (`agentao.store.paths.state_dir()`).

Why a token at all: loopback is not authentication on a machine with other users.
Every local account can connect to 127.0.0.1, and only the file's permissions say
who is the gateway's user (Jupyter's model). So the file is trusted only when it is
a regular file, owned by us, readable by nobody else; anything else is refused with
a `LocalTokenError` saying what to fix, never silently used or replaced.

Creating it races with another `agentao serve` starting at the same moment (replicas
sharing one state directory): the token is written to a private temporary file made
with O_CREAT|O_EXCL and mode 0600, then published with `link()`, which fails when the
name exists. So a reader never sees a half-written file, and exactly one token wins.
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import os
import secrets
import stat
from pathlib import Path
from urllib.parse import urlsplit

TOKEN_FILE_NAME = "gateway-token"
TOKEN_BYTES = 32  # secrets.token_urlsafe(32): 256 bits, 43 characters
MAX_TOKEN_FILE_BYTES = 4096  # a token file larger than this is not ours
FILE_MODE = 0o600
LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost"})


class LocalTokenError(Exception):
    """The token file cannot be trusted or read; the message names the file and the fix."""


def token_path(state_dir: Path) -> Path:
    """Where the local token of a gateway with this state directory lives."""
    return state_dir / TOKEN_FILE_NAME


def ensure_token(state_dir: Path) -> str:
    """The token of `state_dir`, made at the first call (the directory must exist)."""
    path = token_path(state_dir)
    if not os.path.lexists(path):
        _publish(path, secrets.token_urlsafe(TOKEN_BYTES))
    return read_token(path)


def read_token(path: Path) -> str:
    """The token in `path`, if the file is one we can trust; else `LocalTokenError`."""
    try:
        # O_NOFOLLOW: a symlink is refused, not followed; O_NONBLOCK: a FIFO never blocks.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LocalTokenError(f"the token file {path} is a symbolic link; remove it") from None
        raise LocalTokenError(f"cannot open the token file {path}: {exc.strerror}") from None
    try:
        _check_trusted(path, os.fstat(fd))  # what we opened, not what the name is now
        data = os.read(fd, MAX_TOKEN_FILE_BYTES + 1)
    finally:
        os.close(fd)
    token = data.decode("ascii", "replace").strip()
    if not token or len(token) > MAX_TOKEN_FILE_BYTES or not token.isprintable():
        raise LocalTokenError(f"the token file {path} holds no token; delete it to make a new one")
    return token


def token_for_url(url: str, state_dir: Path) -> str | None:
    """The local token to send to the agent at `url`: only for a loopback host, only when
    this user's state directory has a token file (else None)."""
    if not is_loopback_url(url):
        return None
    path = token_path(state_dir)
    if not os.path.lexists(path):
        return None
    return read_token(path)


def is_loopback_url(url: str) -> bool:
    """Whether `url`'s host is this machine's loopback (a name or an address)."""
    try:
        host = (urlsplit(url.strip()).hostname or "").lower()
    except ValueError:
        return False
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_trusted(path: Path, info: os.stat_result) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise LocalTokenError(f"the token file {path} is not a regular file; remove it")
    if info.st_uid != os.geteuid():
        raise LocalTokenError(
            f"the token file {path} belongs to uid {info.st_uid}, not to this user "
            f"(uid {os.geteuid()}); remove it"
        )
    if stat.S_IMODE(info.st_mode) != FILE_MODE:
        raise LocalTokenError(
            f"the token file {path} has mode {stat.S_IMODE(info.st_mode):04o}: other users "
            f"may have read it; delete it (a new token is made) or chmod 600 it"
        )


def _publish(path: Path, token: str) -> None:
    """Write `token` to `path` unless it exists by then (another process won the race)."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)  # whatever the umask
        with os.fdopen(fd, "w") as file:
            file.write(token + "\n")
            file.flush()
            os.fsync(file.fileno())
        with contextlib.suppress(FileExistsError):
            os.link(temporary, path)
    finally:
        os.unlink(temporary)


__all__ = [
    "FILE_MODE",
    "TOKEN_FILE_NAME",
    "LocalTokenError",
    "ensure_token",
    "is_loopback_url",
    "read_token",
    "token_for_url",
    "token_path",
]
