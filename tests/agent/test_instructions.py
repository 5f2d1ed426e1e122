"""instructions.py: AGENTS.md / AGENTAO.md from the workspace up to the repository root and
from the user's config directory; never beyond the repository, never through a symlink."""

from __future__ import annotations

import os
from pathlib import Path

from agentao.agent.instructions import (
    InstructionSettings,
    find_instructions,
    repository_root,
    search_dirs,
)


def tree(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """outside/AGENTS.md, outside/repo/.git, repo/AGENTS.md, repo/pkg/AGENTAO.md."""
    outside = tmp_path / "outside"
    repo = outside / "repo"
    pkg = repo / "pkg"
    pkg.mkdir(parents=True)
    (repo / ".git").mkdir()
    (outside / "AGENTS.md").write_text("INJECTED from above the repository")
    (repo / "AGENTS.md").write_text("repo rules")
    (pkg / "AGENTAO.md").write_text("package rules")
    config = tmp_path / "config"
    config.mkdir()
    (config / "AGENTS.md").write_text("my own rules")
    return repo, pkg, {"AGENTAO_CONFIG_DIR": str(config)}


def test_found_from_the_user_file_then_the_repository_root_down(tmp_path: Path) -> None:
    repo, pkg, env = tree(tmp_path)
    found = find_instructions(pkg, env=env)
    assert [f.text for f in found] == ["my own rules", "repo rules", "package rules"]
    assert found[1].path == repo / "AGENTS.md"


def test_never_above_the_repository_root(tmp_path: Path) -> None:
    repo, pkg, env = tree(tmp_path)
    assert repository_root(pkg) == repo
    assert search_dirs(pkg) == [repo, pkg]
    assert not any("INJECTED" in f.text for f in find_instructions(pkg, env=env))


def test_without_a_repository_only_the_workspace_itself(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("INJECTED from a parent")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "AGENTS.md").write_text("workspace rules")
    env = {"AGENTAO_CONFIG_DIR": str(tmp_path / "no-config")}
    assert [f.text for f in find_instructions(ws, env=env)] == ["workspace rules"]


def test_a_symlink_or_a_fifo_is_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("PRIVATE KEY")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "AGENTS.md").symlink_to(secret)
    os.mkfifo(ws / "AGENTAO.md")
    env = {"AGENTAO_CONFIG_DIR": str(tmp_path / "no-config")}
    assert find_instructions(ws, env=env) == []


def test_caps_cut_and_say_so(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("x" * 500)
    env = {"AGENTAO_CONFIG_DIR": str(tmp_path / "no-config")}
    [found] = find_instructions(tmp_path, InstructionSettings(max_file_chars=100), env)
    assert found.truncated and len(found.text) == 100
    assert (
        InstructionSettings.from_env({"AGENTAO_INSTRUCTIONS_MAX_CHARS": "50"}).max_file_chars == 50
    )
