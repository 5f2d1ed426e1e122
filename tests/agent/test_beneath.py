"""Descriptor-based file access: units, and the symlink-swap race through the real tools.

The race: a process inside the workspace (a command the model ran) swaps a directory
of a path for a symlink to an outside directory, between the permission check and the
use. `exchange` does it atomically with renameat2(RENAME_EXCHANGE), as fast as a loop
can, while the real tools read and write through that path.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import signal
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from agentao import beneath
from agentao.agent.local_env import LocalEnv
from agentao.agent.permissions import PermissionEngine
from agentao.agent.tools.base import ToolContext, ToolError
from agentao.agent.tools.files import ReadFile, WriteFile
from agentao.beneath import PathChanged
from tests.agent.doubles import Nobody

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="renameat2")

RENAME_EXCHANGE = 2
SWAPS_AT_LEAST = 300


def exchange(a: Path, b: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    at_fdcwd = -100
    if libc.renameat2(at_fdcwd, bytes(a), at_fdcwd, bytes(b), RENAME_EXCHANGE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


# The swapper's loop, in a process of its own: a command the model ran is one. (A thread
# of the test's process took turns with the tools for the GIL, so the tools ran only
# while it was inside renameat2, in step with it: under load every read of a test saw
# the same side of the swap, and "both sides were hit" failed.) It counts its swaps in
# a shared file the test maps, and says "ready" once the first is done. It holds each
# state from SWAP_PAUSE up to 32 times that, in turn: a tool call then sometimes fits in
# one state and sometimes spans a swap, so both sides of the race are hit, however fast
# the machine. Unpaced, on a core of its own, it swapped within every call, and no read
# inside could ever succeed; at a fixed 0.1 ms a write (a temporary file and a rename)
# never fit on CI's machine, and "both sides were hit" failed there.
SWAP_PAUSE = 0.0001
SWAP_LOOP = """
import ctypes, mmap, os, struct, sys, time
a, b, counter = map(os.fsencode, sys.argv[1:4])
pause = float(sys.argv[4])
libc = ctypes.CDLL(None, use_errno=True)
with open(counter, "r+b") as f:
    count = mmap.mmap(f.fileno(), 8)
n = 0
while True:
    if libc.renameat2(-100, a, -100, b, 2) != 0:
        sys.exit(f"renameat2: {os.strerror(ctypes.get_errno())}")
    n += 1
    struct.pack_into("q", count, 0, n)
    time.sleep(pause * (1 + n % 32))
    if n == 1:
        print("ready", flush=True)
"""


class Swapper:
    """Exchanges ws/sub (a directory) and ws/alt (a symlink to out/) in a loop, in a
    process of its own (SWAP_LOOP), until the block ends."""

    def __init__(self, ws: Path) -> None:
        self.ws = ws
        self._counter = ws.parent / "swaps"
        self._counter.write_bytes(bytes(8))
        self._count: mmap.mmap | None = None
        self._final: int | None = None  # the count once stopped
        self._process: subprocess.Popen[str] | None = None

    @property
    def swaps(self) -> int:
        if self._final is not None:
            return self._final
        assert self._count is not None
        return struct.unpack_from("q", self._count, 0)[0]

    def __enter__(self) -> Swapper:
        with open(self._counter, "r+b") as f:
            self._count = mmap.mmap(f.fileno(), 8)
        args = [str(self.ws / "sub"), str(self.ws / "alt"), str(self._counter), str(SWAP_PAUSE)]
        self._process = subprocess.Popen(
            [sys.executable, "-c", SWAP_LOOP, *args], stdout=subprocess.PIPE, text=True
        )
        assert self._process.stdout is not None
        assert self._process.stdout.readline() == "ready\n", "the swapper failed"
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._process is not None and self._count is not None
        self._process.terminate()  # renameat2 is atomic: the loop stops between swaps
        assert self._process.wait() == -signal.SIGTERM, "the swapper failed"
        self._process.stdout.close()  # type: ignore[union-attr]
        self._final = self.swaps
        self._count.close()
        if (self.ws / "sub").is_symlink():
            exchange(self.ws / "sub", self.ws / "alt")


async def _decide_and_run(tool: object, args: dict, ws: Path, n: int) -> str:
    """As the turn loop does: decide, and run only what is allowed."""
    ctx = ToolContext(ws, LocalEnv(), Nobody(), workspace=(ws,), call_id=f"c{n}")
    decision = PermissionEngine("workspace-write").decide(tool, args, ctx)  # type: ignore[arg-type]
    if decision.verdict != "allow":
        return "refused"
    try:
        result = await tool.run(args, ctx)  # type: ignore[attr-defined]
    except ToolError as e:
        return f"tool-error: {e}"
    return result.model_text


async def test_symlink_swap_writes_never_land_outside(layout: tuple[Path, Path]) -> None:
    ws, out = layout
    created = refused = 0
    with Swapper(ws) as swapper:
        n = 0
        while n < SWAPS_AT_LEAST or swapper.swaps < SWAPS_AT_LEAST:
            args = {"file_path": f"sub/w{n}.txt", "content": "PWNED"}
            text = await _decide_and_run(WriteFile(), args, ws, n)
            created += text.startswith("Created")
            refused += not text.startswith("Created")
            n += 1
    assert swapper.swaps >= SWAPS_AT_LEAST and n >= SWAPS_AT_LEAST
    assert sorted(p.name for p in out.iterdir()) == ["data.txt"], "a write escaped"
    assert created > 0 and refused > 0  # the race was real: both sides of it were hit


async def test_symlink_swap_reads_never_see_outside(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    seen_inside = 0
    with Swapper(ws) as swapper:
        n = 0
        while n < SWAPS_AT_LEAST or swapper.swaps < SWAPS_AT_LEAST:
            text = await _decide_and_run(ReadFile(), {"file_path": "sub/data.txt"}, ws, n)
            assert "TOP-SECRET" not in text, f"read {n} escaped"
            seen_inside += "INSIDE" in text
            n += 1
    assert swapper.swaps >= SWAPS_AT_LEAST and n >= SWAPS_AT_LEAST
    assert seen_inside > 0


def test_the_race_is_an_escape_for_a_path_string(layout: tuple[Path, Path]) -> None:
    """The detector works: resolve, swap, then open the string, and the read escapes;
    the same sequence through a descriptor walk is refused."""
    ws, _ = layout
    checked = Path(os.path.realpath(ws / "sub" / "data.txt"))
    exchange(ws / "sub", ws / "alt")
    try:
        assert checked.read_text() == "TOP-SECRET\n"  # what `open(path)` does
        with pytest.raises(PathChanged, match="sub is a symlink"):
            beneath.read_bytes(checked)
    finally:
        exchange(ws / "sub", ws / "alt")


# --- units ---------------------------------------------------------------------------


def test_write_creates_parents_and_read_round_trips(ws: Path) -> None:
    beneath.write_bytes(ws / "a" / "b" / "c.txt", b"hi")
    assert beneath.read_bytes(ws / "a" / "b" / "c.txt") == b"hi"
    beneath.write_bytes(ws / "a" / "b" / "c.txt", b"x")  # truncates
    assert (ws / "a" / "b" / "c.txt").read_bytes() == b"x"


def test_symlinks_are_refused_not_followed(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f").write_text("SECRET")
    (ws / "dirlink").symlink_to(outside)
    (ws / "filelink").symlink_to(outside / "f")
    for path in (ws / "dirlink" / "f", ws / "filelink"):
        with pytest.raises(PathChanged):
            beneath.read_bytes(path)
        with pytest.raises(PathChanged):
            beneath.write_bytes(path, b"PWNED")
    assert (outside / "f").read_text() == "SECRET"
    with pytest.raises(PathChanged):
        beneath.write_bytes(ws / "dirlink" / "new" / "f", b"PWNED")
    assert sorted(p.name for p in outside.iterdir()) == ["f"]


def test_special_files_are_refused_without_blocking(ws: Path) -> None:
    os.mkfifo(ws / "fifo")  # opening a FIFO for reading blocks, unless O_NONBLOCK
    with pytest.raises(OSError, match="not a regular file"):
        beneath.read_bytes(ws / "fifo")
    with pytest.raises(OSError):  # ENXIO without a reader, "not a regular file" with one
        beneath.write_bytes(ws / "fifo", b"x")
    (ws / "d").mkdir()
    with pytest.raises(IsADirectoryError):
        beneath.read_bytes(ws / "d")


def test_a_refused_write_does_not_truncate(ws: Path) -> None:
    os.mkfifo(ws / "fifo")
    with pytest.raises(OSError):
        beneath.write_bytes(ws / "fifo", b"x")
    assert (ws / "fifo").exists()


def test_unlink_removes_the_link_not_its_target(ws: Path, tmp_path: Path) -> None:
    target = tmp_path / "target.txt"
    target.write_text("keep")
    (ws / "link").symlink_to(target)
    beneath.unlink(ws / "link")
    assert not (ws / "link").is_symlink() and target.read_text() == "keep"
    (ws / "d").mkdir()
    with pytest.raises(IsADirectoryError):
        beneath.unlink(ws / "d")


def test_rename_never_replaces(ws: Path) -> None:
    (ws / "a").write_text("a")
    (ws / "b").write_text("b")
    with pytest.raises(FileExistsError):
        beneath.rename(ws / "a", ws / "b")
    beneath.rename(ws / "a", ws / "x" / "y" / "a2")
    assert (ws / "x" / "y" / "a2").read_text() == "a" and not (ws / "a").exists()
    with pytest.raises(FileNotFoundError):
        beneath.rename(ws / "missing", ws / "z")
    assert not (ws / "z").exists()


def test_scandir_reports_links_and_refuses_a_linked_directory(ws: Path, tmp_path: Path) -> None:
    (ws / "f").write_text("")
    (ws / "l").symlink_to(tmp_path)
    names = {e.name: e.is_symlink() for e in beneath.scandir(ws)}
    assert names == {"f": False, "l": True}
    with pytest.raises(PathChanged):
        beneath.scandir(ws / "l")


def test_only_resolved_absolute_paths(ws: Path) -> None:
    for bad in (Path("rel/f"), ws / ".." / "f"):
        with pytest.raises(ValueError, match="not a resolved absolute path"):
            beneath.read_bytes(bad)
    with pytest.raises(OSError) as info:
        beneath.read_bytes(ws / "missing")
    assert info.value.errno == errno.ENOENT


def test_walk_reports_symlinks_and_never_enters_them(layout: tuple[Path, Path]) -> None:
    ws, _ = layout
    found = {str(e.rel): e.kind for e in beneath.walk(ws)}
    assert found == {"alt": "link", "sub": "dir", "sub/data.txt": "file"}
    assert [str(e.rel) for e in beneath.walk(ws, lambda rel: False)] == ["alt", "sub"]
