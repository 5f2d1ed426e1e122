"""glob and search_file_content on a real temp tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentao.agent.settings import FileLimits
from agentao.agent.tools.base import ToolContext, ToolError
from agentao.agent.tools.search import Glob, SearchFileContent


@pytest.fixture
def ws(ws: Path) -> Path:
    root = ws
    for rel, text in {
        "src/app.py": "def main():\n    return 42\n",
        "src/util/helpers.py": "# helper\nANSWER = 42\n",
        "docs/readme.md": "The answer is 42.\n",
        ".git/config": "answer 42\n",
        "node_modules/x/index.js": "42\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "bin.dat").write_bytes(b"\x0042\x00")
    secret = root.parent / "outside"
    secret.mkdir()
    (secret / "secret.py").write_text("ANSWER = 42  # secret\n")
    (root / "escape").symlink_to(secret)
    return root


async def test_glob(ctx: ToolContext, ws: Path) -> None:
    tool = Glob()
    assert tool.title({"pattern": "**/*.py"}) == "Glob `**/*.py`"
    result = await tool.run({"pattern": "**/*.py"}, ctx)
    assert result.model_text.splitlines() == [
        str(ws / "src/app.py"),
        str(ws / "src/util/helpers.py"),
    ]
    result = await tool.run({"pattern": "*.py", "path": "src"}, ctx)
    assert result.model_text == str(ws / "src/app.py")
    result = await tool.run({"pattern": "*.nothing"}, ctx)
    assert "No files match" in result.model_text


async def test_glob_does_not_follow_symlinks_out(ctx: ToolContext) -> None:
    result = await Glob().run({"pattern": "escape/*"}, ctx)
    assert "secret" not in result.model_text


@pytest.mark.parametrize("pattern", ["../*", "src/../../*", "/etc/*", "~/*"])
async def test_glob_refuses_escaping_patterns(ctx: ToolContext, pattern: str) -> None:
    with pytest.raises(ToolError, match="relative"):
        await Glob().run({"pattern": pattern}, ctx)


async def test_glob_cap(ctx: ToolContext) -> None:
    result = await Glob(FileLimits(glob_max_results=1)).run({"pattern": "**/*.py"}, ctx)
    assert "glob_max_results=1" in result.model_text


async def test_search_file_content(ctx: ToolContext) -> None:
    tool = SearchFileContent()
    assert tool.title({"pattern": "42", "path": "src"}) == "Search `42` in src"
    result = await tool.run({"pattern": r"\b42\b"}, ctx)
    lines = result.model_text.splitlines()
    assert lines == [
        "docs/readme.md:1: The answer is 42.",
        "src/app.py:2:     return 42",
        "src/util/helpers.py:2: ANSWER = 42",
    ]  # .git, node_modules, binaries and the symlink out are skipped


async def test_search_include_and_single_file(ctx: ToolContext) -> None:
    tool = SearchFileContent()
    result = await tool.run({"pattern": "42", "include": "*.md"}, ctx)
    assert result.model_text == "docs/readme.md:1: The answer is 42."
    result = await tool.run({"pattern": "42", "include": "src/**/*.py"}, ctx)
    assert len(result.model_text.splitlines()) == 2
    result = await tool.run({"pattern": "ANSWER", "path": "src/util/helpers.py"}, ctx)
    assert result.model_text.endswith(":2: ANSWER = 42")


async def test_search_caps_and_errors(ctx: ToolContext) -> None:
    capped = await SearchFileContent(FileLimits(grep_max_matches=1)).run({"pattern": "42"}, ctx)
    assert "grep_max_matches=1" in capped.model_text
    skipped = await SearchFileContent(FileLimits(grep_max_file_bytes=5)).run({"pattern": "42"}, ctx)
    assert "grep_max_file_bytes=5" in skipped.model_text
    with pytest.raises(ToolError, match="regular expression"):
        await SearchFileContent().run({"pattern": "("}, ctx)
    none = await SearchFileContent().run({"pattern": "zzz"}, ctx)
    assert "No matches" in none.model_text


async def test_search_stops_at_its_named_limits(ctx: ToolContext) -> None:
    files = await SearchFileContent(FileLimits(grep_max_files=1)).run({"pattern": "42"}, ctx)
    assert "limit grep_max_files=1" in files.model_text
    total = await SearchFileContent(FileLimits(grep_max_total_bytes=20)).run({"pattern": "42"}, ctx)
    assert "limit grep_max_total_bytes=20" in total.model_text
    walked = await SearchFileContent(FileLimits(walk_max_entries=2)).run({"pattern": "42"}, ctx)
    assert "limit walk_max_entries=2" in walked.model_text
    names = await Glob(FileLimits(walk_max_entries=2)).run({"pattern": "**/*.py"}, ctx)
    assert "limit walk_max_entries=2" in names.model_text


async def test_glob_lists_a_symlink_by_name_and_never_enters_it(ctx: ToolContext, ws: Path) -> None:
    result = await Glob().run({"pattern": "**/*"}, ctx)
    assert str(ws / "escape") in result.model_text.splitlines()
    assert "secret" not in result.model_text
