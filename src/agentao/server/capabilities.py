"""Seed C.1: what `initialize` answers. Capabilities are advertised only where they work.

v1 (a client asking for version 1):
protocolVersion   1
agentInfo         {name "agentao", title "Agentao", version}
authMethods       [] (credentials resolve server-side from the environment)
loadSession       true
promptCapabilities  image: whether the configured model takes images (its catalog entry,
                  else its family: agent/catalog.py `takes_images`); embeddedContext true
                  (`resource` blocks: their URI and text reach the model); audio false
mcpCapabilities   sse true, http true (streamable HTTP; seed C.1 said no, it works now)
sessionCapabilities  list, close, resume, delete, additionalDirectories, fork (unstable; its
                  `_meta` names the key that forks at an earlier user message: server/fork.py),
                  title (unstable: `session/set_title`, server/session_title.py),
                  systemPrompt (append and override: server/client_prompt.py)
_meta["_agentao.cn/extensions"]  the vendor methods, [{method, description}]
_meta["steering"]  {supported: true}: `_session/steering` is served (server/steering.py),
                  advertised where codex-acp and claude-agent-acp advertise it

v2 (a client asking for 2 or more; the connection settles the version, protocol/versions.py):
protocolVersion   2
info              {name "agentao", title "Agentao", version}
capabilities      object markers, never booleans, read off the v2 handler (server/v2.py):
                  `session` only when it serves every baseline session method (session/new,
                  list, resume, close, prompt, cancel); inside it `prompt` (image when the
                  model takes images, embeddedContext), `mcp` (stdio, http), `delete`,
                  `fork`, `status` and `title` (unstable) and `additionalDirectories` only where
                  served; `systemPrompt` (unstable) with `mode.override`.
                  `fork._meta["agentao.cn/beforeTurn"]` describes the fork's key for forking at
                  an earlier user message (server/fork.py).
                  `auth.status` (unstable) only where `auth/status` is served.
authMethods       the surface's AUTH_METHODS once it serves auth/login and auth/logout (the
                  schema: a non-empty list promises both); omitted otherwise
_meta             {steering: {supported: true}} (server/v2.py): `_session/steering`; and
                  `_agentao.cn/extensions`: the other vendor methods v2 serves (rewind)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentao import __version__
from agentao.protocol import schema
from agentao.protocol.decode import to_builtins

PROTOCOL_VERSION = 1
# MCP transports and whether this agent takes them (streamable HTTP through the mcp SDK).
SUPPORTED_TRANSPORTS: Mapping[str, bool] = {"stdio": True, "sse": True, "http": True}
EXTENSIONS_META_KEY = "_agentao.cn/extensions"
# session/fork's _meta key: fork before this stored turn (server/fork.py)
BEFORE_TURN_KEY = "agentao.cn/beforeTurn"
BEFORE_PROMPT_KEY = "agentao.cn/beforePrompt"  # ... the prompt of that turn, to find it by
FORK_AT_ABOUT = (
    "session/fork _meta: the 0-based index of a stored turn (user message); the fork holds "
    f"exactly the turns before it. With {BEFORE_PROMPT_KEY} (that turn's prompt), the "
    "turn is the nearest at or before the index with that prompt"
)
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
    {
        "method": "_session/rewind",
        "description": "Client -> agent request {sessionId, beforeTurn, mode?: files|"
        "conversation|both, dryRun?, force?}: the files and/or the conversation as before "
        "that stored turn; replies {dryRun, files?: {canRewind, error?, changes, "
        "filesChanged, notes}, conversation?: {rewound, messagesDropped}}.",
    },
    {
        "method": "_session/rewind_points",
        "description": "Client -> agent request {sessionId}: the turns a rewind may go back "
        "before; replies {points: [{index, text, files}]}.",
    },
)


def initialize_response() -> dict[str, Any]:
    """The `initialize` result. Fields the seed spells out are written even where they equal
    the schema default (the generated structs omit defaults): `authMethods: []`, every
    prompt capability, both MCP transports."""
    image = image_prompts()
    result = to_builtins(_response(image))
    result["authMethods"] = []
    caps = result["agentCapabilities"]
    caps["promptCapabilities"] = {"image": image, "audio": False, "embeddedContext": True}
    caps["mcpCapabilities"] = dict(SUPPORTED_TRANSPORTS)
    caps["mcpCapabilities"].pop("stdio")
    return result


def _response(image: bool) -> schema.InitializeResponse:
    session = schema.SessionCapabilities(
        list=schema.SessionListCapabilities(),
        delete=schema.SessionDeleteCapabilities(),
        additional_directories=schema.SessionAdditionalDirectoriesCapabilities(),
        resume=schema.SessionResumeCapabilities(),
        close=schema.SessionCloseCapabilities(),
        fork=schema.SessionForkCapabilities(meta={BEFORE_TURN_KEY: FORK_AT_ABOUT}),
        title=schema.SessionTitleCapabilities(),
        system_prompt=schema.SessionSystemPromptCapabilities(
            mode=schema.SessionSystemPromptModeCapabilities(
                override=schema.SessionSystemPromptOverrideCapabilities()
            )
        ),
    )
    capabilities = schema.AgentCapabilities(
        load_session=True,
        prompt_capabilities=schema.PromptCapabilities(
            image=image, audio=False, embedded_context=True
        ),
        mcp_capabilities=schema.McpCapabilities(
            sse=SUPPORTED_TRANSPORTS["sse"], http=SUPPORTED_TRANSPORTS["http"]
        ),
        session_capabilities=session,
    )
    meta: dict[str, Any] = {EXTENSIONS_META_KEY: [dict(e) for e in EXTENSIONS]}
    meta["steering"] = {"supported": True}  # `_session/steering`, as codex-acp (steering.py)
    return schema.InitializeResponse(
        protocol_version=PROTOCOL_VERSION,
        agent_capabilities=capabilities,
        auth_methods=[],
        agent_info=schema.Implementation(name="agentao", title="Agentao", version=__version__),
        meta=meta,
    )


# v2's baseline: supplying `capabilities.session` promises every one of these.
V2_BASELINE_SESSION_METHODS = (
    "session/new",
    "session/list",
    "session/resume",
    "session/close",
    "session/prompt",
    "session/cancel",
)


def initialize_response_v2(surface: object) -> dict[str, Any]:
    """The v2 `initialize` result, advertising only what `surface` (the object serving a v2
    connection, server/v2.py) has a handler for."""
    from agentao.protocol.v2 import schema as v2

    response = v2.InitializeResponse(
        protocol_version=2,
        info=v2.Implementation(name="agentao", title="Agentao", version=__version__),
        capabilities=v2.AgentCapabilities(
            session=_session_capabilities_v2(surface), auth=_auth_capabilities_v2(surface)
        ),
    )
    result = to_builtins(response)
    result.setdefault("capabilities", {})  # the struct omits its {} default; say it
    if _serves(surface, "auth/login") and _serves(surface, "auth/logout"):
        result["authMethods"] = [dict(m) for m in getattr(surface, "AUTH_METHODS", ())]
    served = getattr(
        surface, "VENDOR_METHODS", ()
    )  # a class attribute: the handshake has no instance
    named = [dict(e) for e in EXTENSIONS if e["method"] in served]
    if named:  # the vendor methods this surface serves (rewind: server/rewind.py)
        result.setdefault("_meta", {})[EXTENSIONS_META_KEY] = named
    if callable(getattr(surface, "steer", None)):  # `_session/steering` (server/steering.py)
        result.setdefault("_meta", {})["steering"] = {"supported": True}
    return result


def _session_capabilities_v2(surface: object) -> Any:
    from agentao.protocol.v2 import schema as v2

    if not all(_serves(surface, m) for m in V2_BASELINE_SESSION_METHODS):
        return None
    marker = v2.PromptImageCapabilities() if image_prompts() else None
    return v2.SessionCapabilities(
        prompt=v2.PromptCapabilities(
            image=marker, embedded_context=v2.PromptEmbeddedContextCapabilities()
        ),
        mcp=v2.McpCapabilities(stdio=v2.McpStdioCapabilities(), http=v2.McpHttpCapabilities()),
        delete=v2.SessionDeleteCapabilities() if _serves(surface, "session/delete") else None,
        fork=_fork_capabilities_v2() if _serves(surface, "session/fork") else None,
        status=v2.SessionStatusCapabilities() if _serves(surface, "session/status") else None,
        title=v2.SessionTitleCapabilities() if _serves(surface, "session/set_title") else None,
        additional_directories=v2.SessionAdditionalDirectoriesCapabilities(),
        system_prompt=v2.SessionSystemPromptCapabilities(
            mode=v2.SessionSystemPromptModeCapabilities(
                override=v2.SessionSystemPromptOverrideCapabilities()
            )
        ),
    )


def _fork_capabilities_v2() -> Any:
    """The fork marker, its `_meta` naming the key that forks at an earlier user message."""
    from agentao.protocol.v2 import schema as v2

    return v2.SessionForkCapabilities(meta={BEFORE_TURN_KEY: FORK_AT_ABOUT})


def _auth_capabilities_v2(surface: object) -> Any:
    """`auth.status` (unstable) where `auth/status` is served; else no `auth` at all."""
    from agentao.protocol.v2 import schema as v2

    if not _serves(surface, "auth/status"):
        return None
    return v2.AgentAuthCapabilities(status=v2.AuthStatusCapabilities())


def _serves(surface: object, method: str) -> bool:
    """Whether `surface` has the handler the endpoint would call (the generated
    python_name: `session/new` -> `session_new`)."""
    return callable(getattr(surface, method.replace("/", "_"), None))


def image_prompts() -> bool:
    """Whether the configured model takes images. A session switched to a model that does
    not refuses an image block (-32602) naming the model. Reads the catalog file only
    when there is one (initialize is answered before anything heavy loads)."""
    from agentao.agent.catalog import CatalogError, configured_model, load_catalog, takes_images

    provider, model = configured_model()
    try:
        catalog = load_catalog()
    except CatalogError:
        return False  # session/new says what is wrong with it
    entry = catalog.provider(provider) if catalog is not None else None
    if model is None and entry is not None and entry.models:
        model = entry.models[0].id  # the provider's first model, as session/new takes it
    if model is None:
        return False
    info = catalog.find(f"{provider.lower()}/{model}") if catalog is not None else None
    return takes_images(info, model)


__all__ = [
    "BEFORE_PROMPT_KEY",
    "BEFORE_TURN_KEY",
    "EXTENSIONS",
    "EXTENSIONS_META_KEY",
    "PROTOCOL_VERSION",
    "SUPPORTED_TRANSPORTS",
    "V2_BASELINE_SESSION_METHODS",
    "initialize_response",
    "initialize_response_v2",
]
