"""The client's file service (`LocalFiles`, which the gateway runs for its sessions)
reaches files through descriptors: a FIFO never blocks a thread, and a directory
swapped for a symlink mid-write never lets a write land outside (issue 20)."""

from __future__ import annotations

import asyncio
import errno
import os
import sys
from pathlib import Path

import pytest

from agentao.client.files import LocalFiles, Workspace
from agentao.protocol.errors import AcpError, InvalidParams
from tests.agent.test_beneath import SWAPS_AT_LEAST, Swapper

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="renameat2")


def has_no_reader(fifo: Path) -> bool:
    """Nobody (no blocked thread either) has the FIFO open for reading: a non-blocking
    open for writing then fails with ENXIO."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        return exc.errno == errno.ENXIO
    os.close(fd)  # a reader was waiting: this also lets it go (EOF), so nothing hangs
    return False


async def test_reading_a_fifo_is_refused_at_once_and_blocks_no_thread(layout) -> None:
    ws, _ = layout
    fifo = ws / "fifo"
    os.mkfifo(fifo)
    workspace = Workspace.of("s1", str(ws))
    read = asyncio.ensure_future(LocalFiles().read_text_file(workspace, str(fifo), None, None))
    try:
        # Waits on the reply itself; the timeout only keeps a regression from hanging.
        with pytest.raises(InvalidParams, match="not a regular file"):
            await asyncio.wait_for(asyncio.shield(read), timeout=30)
        assert has_no_reader(fifo)
    finally:
        has_no_reader(fifo)  # release a thread the old code left blocked in open()
        await asyncio.gather(read, return_exceptions=True)


async def test_writing_over_a_fifo_is_refused(layout) -> None:
    ws, _ = layout
    os.mkfifo(ws / "fifo")
    with pytest.raises(InvalidParams, match="not a regular file"):
        await LocalFiles().write_text_file(Workspace.of("s1", str(ws)), str(ws / "fifo"), "x")
    assert (ws / "fifo").is_fifo()


async def test_symlink_swap_writes_never_land_outside(layout) -> None:
    ws, out = layout
    files, workspace = LocalFiles(), Workspace.of("s1", str(ws))
    written = refused = 0
    with Swapper(ws) as swapper:
        n = 0
        while n < SWAPS_AT_LEAST or swapper.swaps < SWAPS_AT_LEAST:
            try:
                await files.write_text_file(workspace, f"{ws}/sub/w{n}.txt", "PWNED")
                written += 1
            except AcpError:
                refused += 1
            n += 1
    assert swapper.swaps >= SWAPS_AT_LEAST and n >= SWAPS_AT_LEAST
    assert sorted(p.name for p in out.iterdir()) == ["data.txt"], "a write escaped"
    assert written > 0 and refused > 0  # the race was real: both sides of it were hit


async def test_symlink_swap_reads_never_see_outside(layout) -> None:
    ws, _ = layout
    files, workspace = LocalFiles("error"), Workspace.of("s1", str(ws))
    seen_inside = 0
    with Swapper(ws) as swapper:
        n = 0
        while n < SWAPS_AT_LEAST or swapper.swaps < SWAPS_AT_LEAST:
            try:
                text = await files.read_text_file(workspace, f"{ws}/sub/data.txt", None, None)
            except AcpError:
                text = ""
            assert "TOP-SECRET" not in text, f"read {n} escaped"
            seen_inside += text == "INSIDE\n"
            n += 1
    assert seen_inside > 0


async def test_control_writes_inside_succeed_and_keep_the_mode(layout) -> None:
    ws, _ = layout
    target = ws / "sub" / "data.txt"
    target.chmod(0o640)
    workspace = Workspace.of("s1", str(ws))
    await LocalFiles().write_text_file(workspace, str(target), "NEW\n")
    await LocalFiles().write_text_file(workspace, f"{ws}/new/deep/file.txt", "made\n")
    assert target.read_text() == "NEW\n" and target.stat().st_mode & 0o777 == 0o640
    assert (ws / "new" / "deep" / "file.txt").read_text() == "made\n"
    assert [p.name for p in (ws / "sub").iterdir()] == ["data.txt"]  # no temp file left
