"""The protocol layer's public surface is exactly what `__all__` says (cf. httpx)."""

from __future__ import annotations

import subprocess
import sys

import agentao.protocol as protocol


def test_exported_members() -> None:
    public = {name for name in dir(protocol) if not name.startswith("_")}
    modules = {"connection", "endpoint", "errors", "framing", "lanes", "lifecycle"}
    modules |= {"schema", "methods", "decode", "stdio", "salvage", "meta", "v2", "versions"}
    assert public - modules == set(protocol.__all__)
    for name in protocol.__all__:
        assert getattr(protocol, name).__module__.startswith("agentao.protocol")


def test_protocol_import_does_not_load_llm_sdks() -> None:
    code = (
        "import sys, agentao.protocol, agentao.protocol.schema;"
        "print(sorted(m for m in ('openai', 'anthropic', 'mcp', 'fastapi', 'httpx') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
