"""The layer rule of docs/design.md §2: imports point down only.

protocol  store          (leaves)
agent                    (knows nothing of ACP)
server -> protocol, agent, store
client -> protocol
gateway -> client, protocol, store
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "agentao"
MAY_IMPORT = {
    "protocol": set(),
    "store": set(),
    "agent": set(),
    "server": {"protocol", "agent", "store"},
    "client": {"protocol"},
    "gateway": {"client", "protocol", "store"},
}


def agentao_imports(path: Path) -> set[str]:
    layers: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "agentao" and len(parts) > 1 and parts[1] in MAY_IMPORT:
                layers.add(parts[1])
    return layers


@pytest.mark.parametrize("layer", sorted(MAY_IMPORT))
def test_imports_point_down(layer: str) -> None:
    allowed = MAY_IMPORT[layer] | {layer}
    wrong = {
        str(path.relative_to(PACKAGE)): sorted(agentao_imports(path) - allowed)
        for path in (PACKAGE / layer).rglob("*.py")
        if agentao_imports(path) - allowed
    }
    assert wrong == {}
