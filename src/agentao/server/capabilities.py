"""Seed C.1: what `initialize` answers. Capabilities are advertised only where they work.

protocolVersion   1 (any requested version negotiates to 1; never an error)
agentInfo         {name "agentao", title "Agentao", version}
authMethods       [] (credentials resolve server-side from the environment)
loadSession       true; promptCapabilities all false (text and resource links)
mcpCapabilities   sse true, http false (seed C.1)
sessionCapabilities  list, close, resume, delete, additionalDirectories
_meta["_agentao.cn/extensions"]  the vendor methods, [{method, description}]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentao import __version__
from agentao.protocol import schema
from agentao.protocol.decode import to_builtins

PROTOCOL_VERSION = 1
# MCP transports and whether this agent takes them (seed C.1: SSE yes, HTTP no).
SUPPORTED_TRANSPORTS: Mapping[str, bool] = {"stdio": True, "sse": True, "http": False}
EXTENSIONS_META_KEY = "_agentao.cn/extensions"
EXTENSIONS: tuple[dict[str, str], ...] = (
    {
        "method": "_agentao.cn/ask_user",
        "description": "Agent -> client request {sessionId, question}; reply {answer} "
        '(or {outcome: "answered", text}); no answer means "(user unavailable)".',
    },
    {
        "method": "_agentao.cn/set_model",
        "description": "Client -> agent request {sessionId, model}: switch the model of the "
        "current provider; replies {model}.",
    },
)


def initialize_response() -> dict[str, Any]:
    """The `initialize` result. Fields the seed spells out are written even where they equal
    the schema default (the generated structs omit defaults): `authMethods: []`, every
    prompt capability, `mcpCapabilities.http: false`."""
    result = to_builtins(_response())
    result["authMethods"] = []
    caps = result["agentCapabilities"]
    caps["promptCapabilities"] = {"image": False, "audio": False, "embeddedContext": False}
    caps["mcpCapabilities"] = dict(SUPPORTED_TRANSPORTS)
    caps["mcpCapabilities"].pop("stdio")
    return result


def _response() -> schema.InitializeResponse:
    session = schema.SessionCapabilities(
        list=schema.SessionListCapabilities(),
        delete=schema.SessionDeleteCapabilities(),
        additional_directories=schema.SessionAdditionalDirectoriesCapabilities(),
        resume=schema.SessionResumeCapabilities(),
        close=schema.SessionCloseCapabilities(),
    )
    capabilities = schema.AgentCapabilities(
        load_session=True,
        prompt_capabilities=schema.PromptCapabilities(
            image=False, audio=False, embedded_context=False
        ),
        mcp_capabilities=schema.McpCapabilities(
            sse=SUPPORTED_TRANSPORTS["sse"], http=SUPPORTED_TRANSPORTS["http"]
        ),
        session_capabilities=session,
    )
    meta: dict[str, Any] = {EXTENSIONS_META_KEY: [dict(e) for e in EXTENSIONS]}
    return schema.InitializeResponse(
        protocol_version=PROTOCOL_VERSION,
        agent_capabilities=capabilities,
        auth_methods=[],
        agent_info=schema.Implementation(name="agentao", title="Agentao", version=__version__),
        meta=meta,
    )


__all__ = [
    "EXTENSIONS",
    "EXTENSIONS_META_KEY",
    "PROTOCOL_VERSION",
    "SUPPORTED_TRANSPORTS",
    "initialize_response",
]
