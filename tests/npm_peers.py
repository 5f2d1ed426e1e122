"""The real ACP v2 peers from npm (tests/peers/): where they are, and how to run them.

`npm ci --prefix tests/peers` (`.ci/run` does it) installs the official TypeScript SDK
(`@agentclientprotocol/sdk`, whose `./experimental/v2` export our `v2_agent.mjs` and
`v2_client.mjs` are written with) and codex-acp 2.x. `find_peers()` finds them; the
`v2_peers` fixture (tests/conftest.py) skips a test where they are not installed, except
under CI, where that is a failure.

codex-acp runs the real codex (`@openai/codex`), which we point at the fake LLM with a
config in a throwaway `CODEX_HOME` (`codex_env`): a custom model provider whose base URL
is the fake's, its key in an environment variable, on the Responses API (codex has no
other: tests/fakes/fake_responses.py).
(The module is not `tests/peers.py`: that name would shadow the npm package's folder.)
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from tests.fakes.fake_llm import FakeLLM

__all__ = ["PEERS_DIR", "NpmPeers", "codex_env", "find_peers"]

PEERS_DIR = Path(__file__).resolve().parent / "peers"
CODEX_KEY_VARIABLE = "AGENTAO_TEST_CODEX_KEY"


@dataclass(frozen=True)
class NpmPeers:
    node: str
    v2_agent: Path
    v2_client: Path
    codex_acp: Path

    def agent_command(self, *args: str) -> list[str]:
        return [self.node, str(self.v2_agent), *args]

    def client_command(self, agent: list[str], *args: str) -> list[str]:
        return [self.node, str(self.v2_client), *args, "--", *agent]


def find_peers() -> NpmPeers | str:
    """The installed peers, or why they cannot run here."""
    node = shutil.which("node")
    if node is None:
        return "node is not installed (Debian: npm)"
    codex_acp = PEERS_DIR / "node_modules" / ".bin" / "codex-acp"
    sdk = PEERS_DIR / "node_modules" / "@agentclientprotocol" / "sdk"
    if not (codex_acp.exists() and sdk.is_dir()):
        return f"the npm peers are not installed: npm ci --prefix {PEERS_DIR}"
    return NpmPeers(node, PEERS_DIR / "v2_agent.mjs", PEERS_DIR / "v2_client.mjs", codex_acp)


def codex_env(home: Path, fake: FakeLLM) -> dict[str, str]:
    """Environment for codex-acp that makes codex talk to `fake` only: its config and
    state in `home` (a fresh CODEX_HOME, also HOME so nothing of the user's is read)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f'model = "{fake.model}"\n'
        'model_provider = "fake"\n'
        "[model_providers.fake]\n"
        'name = "fake"\n'
        f'base_url = "{fake.base_url}"\n'
        f'env_key = "{CODEX_KEY_VARIABLE}"\n'
        'wire_api = "responses"\n'
    )
    return {
        "PATH": _path_with_node(),
        "HOME": str(home),
        "CODEX_HOME": str(home),
        CODEX_KEY_VARIABLE: fake.api_key,
        "NO_BROWSER": "1",  # no ChatGPT login offered: there is no browser here
    }


def _path_with_node() -> str:
    """A PATH where `node` is found (codex-acp's launcher is `#!/usr/bin/env node`)."""
    node = shutil.which("node")
    dirs = [str(Path(node).parent)] if node else []
    return ":".join([*dirs, "/usr/local/bin", "/usr/bin", "/bin"])
