"""agent/checkpoints.py's settings and shell scan, on real files (the whole path through a
real agent is tests/e2e/test_agent_rewind.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentao.agent.checkpoints import ABSENT, CheckpointLimits, Checkpoints, checked_relative


@pytest.mark.parametrize(
    ("env", "field"),
    [
        ({"AGENTAO_CHECKPOINT_TURN_BYTES": "-1"}, "AGENTAO_CHECKPOINT_TURN_BYTES"),
        ({"AGENTAO_CHECKPOINT_TURN_FILES": "many"}, "AGENTAO_CHECKPOINT_TURN_FILES"),
        ({"AGENTAO_CHECKPOINT_SKIP_DIRS": "a/b"}, "AGENTAO_CHECKPOINT_SKIP_DIRS"),
        ({"AGENTAO_CHECKPOINT_SKIP_DIRS": ".."}, "AGENTAO_CHECKPOINT_SKIP_DIRS"),
    ],
)
def test_a_bad_setting_names_its_variable(env: dict[str, str], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        CheckpointLimits.from_env(env)


def test_settings_from_the_environment() -> None:
    limits = CheckpointLimits.from_env(
        {"AGENTAO_CHECKPOINT_SESSION_BYTES": "1000", "AGENTAO_CHECKPOINT_SKIP_DIRS": "out, .git"}
    )
    assert limits.session_bytes == 1000 and limits.skip_dirs == ("out", ".git")
    assert not CheckpointLimits.from_env({"AGENTAO_CHECKPOINTS": "off"}).enabled


@pytest.mark.parametrize("rel", ["../x", "/etc/passwd", "a/../../x", "", "./a", "a\0b", "a//b/"])
def test_only_plain_relative_paths_pass(rel: str) -> None:
    assert str(checked_relative("a/b.txt")) == "a/b.txt"
    with pytest.raises(ValueError, match="outside the workspace"):
        checked_relative(rel)


async def test_a_shell_scan_skips_the_rebuilt_trees_and_counts_past_its_bound(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    (ws / "node_modules").mkdir(parents=True)
    (ws / "src").mkdir()
    limits = CheckpointLimits(scan_max_files=3)
    checkpoints = Checkpoints(tmp_path / "state", "s", limits)
    watch = await checkpoints.watch(0, ws, "execute", [])
    assert watch is not None
    (ws / "node_modules" / "dep.js").write_text("x")
    (ws / "src" / "made.py").write_text("x")
    await watch.after()
    assert {rel: r.prior for rel, r in checkpoints.read(0).items()} == {"src/made.py": ABSENT}
    for n in range(4):
        (ws / f"f{n}").write_text("x")
    crowded = await checkpoints.watch(1, ws, "execute", [])
    assert crowded is not None
    await crowded.after()
    assert checkpoints.read(1) == {}
    assert "scan_max_files (3)" in checkpoints.notes(1)[0]
