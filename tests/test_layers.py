"""The layer rule of docs/design.md §2: imports point down only.

protocol  store          (leaves)
agent                    (knows nothing of ACP)
server -> protocol, agent, store
client -> protocol
gateway -> client, protocol, store
cli -> any of them       (the command's faces for people: run, demo, doctor, rendering)

`agentao/credentials.py` (secrets: which variables, how text is redacted),
`agentao/addresses.py` (which addresses are public), `agentao/beneath.py` (descriptor-based
file access, for the agent's file tools and the client's file service alike),
`agentao/modes.py` (our agent's modes by rank), `agentao/bwrap.py` (the system every
bubblewrap sandbox mounts), `agentao/local_token.py` (the keyless
gateway's token file, which `serve` writes and the command's clients read) and
`agentao/http1.py` (the small HTTP/1.1 client of the agent's LLM provider and of the
client's remote POSTs) and `agentao/loops.py` (the event loop every process runs) are leaf
modules
outside the layers that any of them may use.
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
    "cli": {"protocol", "store", "agent", "server", "client", "gateway"},
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


def module_graph() -> dict[str, set[str]]:
    """Every module of the package and the modules it imports (at any depth of the code,
    functions included: a lazy import is still a dependency), by dotted name."""
    names = {
        ".".join(("agentao", *path.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(
            ".__init__"
        ): path
        for path in PACKAGE.rglob("*.py")
    }
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                targets.update(
                    f"{base}.{a.name}" if f"{base}.{a.name}" in names else base for a in node.names
                )
        graph[name] = {_known(t, names) for t in targets} - {None, name}  # type: ignore[misc]
    return graph


def _known(target: str, names: dict[str, Path]) -> str | None:
    while target and target not in names:
        target = target.rpartition(".")[0]
    return target or None


def test_no_import_circles() -> None:
    """A circle means two modules share something a third should own (design.md §2)."""
    import graphlib

    try:
        tuple(graphlib.TopologicalSorter(module_graph()).static_order())
    except graphlib.CycleError as exc:
        pytest.fail(f"import circle: {' -> '.join(exc.args[1])}")


def test_the_circle_check_sees_a_circle() -> None:
    import graphlib

    graph = module_graph()
    graph["agentao.protocol.framing"].add("agentao.protocol.connection")  # connection imports it
    with pytest.raises(graphlib.CycleError):
        tuple(graphlib.TopologicalSorter(graph).static_order())
