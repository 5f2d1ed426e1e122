from pathlib import Path

from agentao.store.paths import database_path, state_dir


def test_agentao_home_wins(tmp_path):
    env = {"AGENTAO_HOME": str(tmp_path / "h"), "XDG_STATE_HOME": "/x"}
    assert state_dir(env) == tmp_path / "h"
    assert database_path(env) == tmp_path / "h" / "agentao.sqlite3"
    assert (tmp_path / "h").is_dir()


def test_xdg_then_home():
    assert state_dir({"XDG_STATE_HOME": "/xdg"}) == Path("/xdg/agentao")
    assert state_dir({"XDG_STATE_HOME": "relative"}) == Path.home() / ".local/state/agentao"
    assert state_dir({}) == Path.home() / ".local/state/agentao"
