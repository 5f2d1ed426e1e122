"""The file tools on real files in a temp workspace, through LocalEnv."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentao.agent.events import DiffOutput, Location, TextOutput
from agentao.agent.settings import FileLimits
from agentao.agent.tools.base import ToolContext, ToolError
from agentao.agent.tools.files import (
    DeleteFile,
    ListDirectory,
    MoveFile,
    ReadFile,
    Replace,
    WriteFile,
)


@pytest.fixture
def ws(ws: Path) -> Path:
    (ws / "hello.txt").write_text("hello\nworld\n")
    return ws


async def test_read_file(ctx: ToolContext, ws: Path) -> None:
    tool = ReadFile()
    assert tool.title({"file_path": "hello.txt"}) == "Read hello.txt"
    assert tool.locations({"file_path": "hello.txt", "offset": 2}, ws) == (
        Location(str(ws / "hello.txt"), 2),
    )
    result = await tool.run({"file_path": "hello.txt"}, ctx)
    assert result.model_text == "hello\nworld\n"
    assert result.content == (TextOutput("hello\nworld\n"),)
    result = await tool.run({"file_path": str(ws / "hello.txt"), "offset": 2}, ctx)
    assert result.model_text == "world\n"


async def test_read_file_pages_with_a_marker(ctx: ToolContext, ws: Path) -> None:
    (ws / "long.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    result = await ReadFile().run({"file_path": "long.txt", "offset": 3, "limit": 2}, ctx)
    assert result.model_text.startswith("line 3\nline 4\n")
    assert "offset=5" in result.model_text


async def test_read_file_caps_long_lines_and_total(ctx: ToolContext, ws: Path) -> None:
    (ws / "wide.txt").write_text("x" * 50 + "\n")
    result = await ReadFile(FileLimits(read_max_line_chars=10)).run({"file_path": "wide.txt"}, ctx)
    assert result.model_text.startswith("x" * 10 + " [")
    assert "read_max_line_chars=10" in result.model_text
    result = await ReadFile(FileLimits(read_max_chars=20)).run({"file_path": "wide.txt"}, ctx)
    assert "read_max_chars=20" in result.model_text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"file_path": "missing.txt"}, "does not exist"),
        ({"file_path": "."}, "directory"),
        ({"file_path": ""}, "non-empty"),
        ({"file_path": "hello.txt", "offset": 0}, "positive"),
    ],
)
async def test_read_file_errors(ctx: ToolContext, args: dict, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        await ReadFile().run(args, ctx)


async def test_list_directory(ctx: ToolContext, ws: Path) -> None:
    (ws / "sub").mkdir()
    (ws / "b.py").write_text("")
    (ws / "link").symlink_to(ws / "hello.txt")
    result = await ListDirectory().run({"path": ".", "ignore": ["*.py"]}, ctx)
    assert result.model_text.splitlines()[1:] == ["sub/", "hello.txt", "link@"]
    capped = await ListDirectory(FileLimits(list_max_entries=1)).run({"path": "."}, ctx)
    assert "list_max_entries=1" in capped.model_text


async def test_write_file_creates_then_overwrites(ctx: ToolContext, ws: Path) -> None:
    tool = WriteFile()
    assert tool.title({"file_path": "new/a.txt"}) == "Write new/a.txt"
    result = await tool.run({"file_path": "new/a.txt", "content": "one\n"}, ctx)
    assert (ws / "new/a.txt").read_text() == "one\n"
    assert result.content == (DiffOutput(str(ws / "new/a.txt"), None, "one\n"),)
    result = await tool.run({"file_path": "new/a.txt", "content": "two\n"}, ctx)
    assert result.content == (DiffOutput(str(ws / "new/a.txt"), "one\n", "two\n"),)


async def test_replace(ctx: ToolContext, ws: Path) -> None:
    tool = Replace()
    result = await tool.run(
        {"file_path": "hello.txt", "old_string": "world", "new_string": "there"}, ctx
    )
    assert (ws / "hello.txt").read_text() == "hello\nthere\n"
    assert result.content == (
        DiffOutput(str(ws / "hello.txt"), "hello\nworld\n", "hello\nthere\n"),
    )


async def test_replace_all_and_ambiguity(ctx: ToolContext, ws: Path) -> None:
    (ws / "r.txt").write_text("a a a")
    args = {"file_path": "r.txt", "old_string": "a", "new_string": "b"}
    with pytest.raises(ToolError, match="3 times"):
        await Replace().run(args, ctx)
    await Replace().run({**args, "replace_all": True}, ctx)
    assert (ws / "r.txt").read_text() == "b b b"
    with pytest.raises(ToolError, match="not found"):
        await Replace().run(args, ctx)
    with pytest.raises(ToolError, match="does not exist"):
        await Replace().run({**args, "file_path": "nope.txt"}, ctx)


async def test_delete_file(ctx: ToolContext, ws: Path, tmp_path: Path) -> None:
    result = await DeleteFile().run({"file_path": "hello.txt"}, ctx)
    assert not (ws / "hello.txt").exists()
    assert "Deleted" in result.model_text
    with pytest.raises(ToolError, match="does not exist"):
        await DeleteFile().run({"file_path": "hello.txt"}, ctx)
    (ws / "d").mkdir()
    with pytest.raises(ToolError, match="directory"):
        await DeleteFile().run({"file_path": "d"}, ctx)


async def test_delete_removes_a_symlink_not_its_target(ctx: ToolContext, ws: Path) -> None:
    outside = ws.parent / "keep.txt"
    outside.write_text("keep")
    (ws / "link").symlink_to(outside)
    await DeleteFile().run({"file_path": "link"}, ctx)
    assert not (ws / "link").is_symlink() and outside.read_text() == "keep"


async def test_move_file(ctx: ToolContext, ws: Path) -> None:
    tool = MoveFile()
    assert tool.title({"source": "a", "destination": "b"}) == "Move a → b"
    assert len(tool.locations({"source": "a", "destination": "b"}, ws)) == 2
    await tool.run({"source": "hello.txt", "destination": "sub/hi.txt"}, ctx)
    assert (ws / "sub/hi.txt").read_text() == "hello\nworld\n"
    (ws / "other.txt").write_text("")
    with pytest.raises(ToolError, match="already exists"):
        await tool.run({"source": "other.txt", "destination": "sub/hi.txt"}, ctx)
    with pytest.raises(ToolError, match="does not exist"):
        await tool.run({"source": "gone.txt", "destination": "x.txt"}, ctx)
