"""The gateway's settings: agents, API keys and limits, from a TOML file and the command line.

A config file looks like this (every section optional)::

    [server]
    host = "127.0.0.1"
    port = 8765
    store = "/var/lib/agentao/gateway.sqlite3"   # default: the state directory
    # or a PostgreSQL database several gateways share (also --store, AGENTAO_STORE_URL):
    # store = "postgresql://agentao:secret@db.internal:5432/agentao"
    # Host headers served besides the loopback names (127.0.0.1, localhost, [::1]) on the
    # bound port, and the bound address itself: "name" (any port) or "name:port".
    allowed_hosts = ["gateway.example.com"]
    # Browser origins besides our own that may POST and open WebSockets (CORS is answered
    # for them, and for nobody else): "scheme://host[:port]".
    allowed_origins = ["https://ui.example.com"]
    # MCP servers a remote ACP client names in session/new, load or resume: an http/sse
    # URL whose host resolves to a loopback, private, link-local, … address is refused
    # (the gateway's host would call its own network for the client) unless this is true.
    mcp_allow_private = false
    # Headers such a server gets from the client: Authorization and X-… (but never
    # X-Forwarded-*, X-Real-IP, Host, Cookie, Forwarded, Proxy-*, …), plus these names.
    mcp_allowed_headers = ["Api-Version"]

    [limits]
    permission_deadline_seconds = 60

    [agents.agentao]
    command = ["agentao", "--acp"]      # or one string, split like a shell would
    processes = 2                       # per key ceiling in use (each has its own)
    cwd = "/srv/work"                   # the sessions' working directory (writable)
    env = { LLM_PROVIDER = "SCRIPTED" }
    protocol = "auto"                   # ACP version: 1 if it speaks it, else 2 ("1", "2": only it)
    always_allow = true                 # offer a person its "Always allow" (default: ours only)
    busy = "queue"                      # a request for a busy conversation waits (default: 409)

    [agents.agentao.sandbox]            # the agent process's confinement (confine.py)
    read = ["/srv/docs"]                # more paths it may read
    write = ["/srv/cache"]              # more paths it may write
    pass_env = ["OPENAI_*"]             # the gateway's variables it gets (globs)

    [agents.agentao.ceilings.ask]       # what a key with this ceiling may change (ceilings.py)
    mode = "workspace-write"            # its sessions start in this mode
    modes = ["read-only", "plan"]       # and may switch to these ("*": any)
    options = { model = ["*"] }         # config option values it may set

    [models]                            # names a client may use for an agent (`/v1/models`)
    gpt-4o = "agentao"                  # the agent, with its default model
    "gpt-4o-mini" = "agentao/gpt-4o-mini"   # the agent and one of its own models

    [[keys]]
    name = "alice"
    key = "sk-alice-..."                # or key_sha256 = "<hex digest>"
    agents = ["agentao"]                # default: every agent
    ceiling = "ask"                     # the most a request may ask for
    policy = "reads"                    # what a request gets when it asks for nothing
    tokens_per_day = 200000             # its turns' tokens a UTC day, then 429 (budgets.py)
    usd_per_day = 5.0                   # its turns' cost a UTC day, priced by [prices]

    [prices.agentao]                    # an agent's or "agent/model"'s price (prices.py)
    input_usd_per_million = 2.5
    output_usd_per_million = 10.0

`[limits]` is `limits.py`'s `Limits`. Unknown settings are errors naming them, in every
table (top level, `[server]`, `[limits]`, `[agents.NAME]`, `[[keys]]`), never ignored: a
misspelt `ceilng` would leave a key at its default. Permission policies, weakest first: `reject` < `reads` < `ask` < `all`. A key may
not be named `local`: that is the keyless local user, who owns everything made without keys.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import sys
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from agentao.gateway.ceilings import CeilingRules, parse_rules
from agentao.gateway.confine import OUR_AGENT_PASS_ENV, AgentSandbox, AgentSandboxMode
from agentao.gateway.hosts import normalize_host, normalize_origin
from agentao.gateway.limits import Limits, parse_limits
from agentao.gateway.prices import Prices, parse_prices
from agentao.gateway.turn_line import BUSY_CHOICES, Busy
from agentao.store.target import (
    STORE_URL_ENV,
    StoreUrlInvalid,
    check_store_url,
    is_postgres_url,
)

Policy = Literal["reject", "reads", "ask", "all"]
POLICY_ORDER: tuple[Policy, ...] = ("reject", "reads", "ask", "all")
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})
LOCAL_NAME = "local"  # the principal without keys; its objects must not go to a key
RESERVED_KEY_NAMES = frozenset({LOCAL_NAME})
_TABLES = frozenset({"server", "limits", "agents", "keys", "models", "prices"})
_SERVER_SETTINGS = frozenset(
    {
        "host",
        "port",
        "store",
        "allowed_hosts",
        "allowed_origins",
        "advertise_url",
        "cross_replica",
        "agent_sandbox",
        "allow_unconfined_agents",
        "mcp_allow_private",
        "mcp_allowed_headers",
    }
)
CrossReplica = Literal["forward", "redirect"]
CROSS_REPLICA: tuple[CrossReplica, ...] = ("forward", "redirect")
_AGENT_SETTINGS = frozenset(
    {"command", "processes", "cwd", "env", "sandbox", "ceilings", "protocol", "always_allow",
     "busy"}
)  # fmt: skip
AGENT_PROTOCOLS = {"auto": None, "1": 1, "2": 2}  # `[agents.NAME] protocol` -> Client(protocol=)
_KEY_SETTINGS = frozenset(
    {"name", "key", "key_sha256", "agents", "ceiling", "policy", "tokens_per_day", "usd_per_day"}
)


class ConfigError(ValueError):
    """The config file or a command-line option is not usable; the message says why."""


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """One ACP agent command, served as the model `name`."""

    name: str
    command: tuple[str, ...]
    processes: int = 1  # per key ceiling in use: each ceiling has processes of its own
    cwd: str = field(default_factory=os.getcwd)
    env: tuple[tuple[str, str], ...] = ()
    sandbox: AgentSandbox = field(default_factory=AgentSandbox)
    ceilings: tuple[tuple[str, CeilingRules], ...] = ()  # ceiling -> rules (ceilings.py)
    protocol: int | None = None  # the ACP version its processes speak; None: auto (pool.py)
    # Offer a person the agent's allow_always ("Always allow")? None: for our agent only,
    # which keeps such a grant for its session; another agent's may outlive it (written
    # into the project, say) and reach other keys' sessions in the same directory.
    always_allow: bool | None = None
    busy: Busy = "reject"  # a request for a busy conversation: 409, or "queue" (turn_line.py)

    def offers_always(self) -> bool:
        return is_our_agent(self.command) if self.always_allow is None else self.always_allow

    def rules(self, ceiling: str) -> CeilingRules:
        """What a key with `ceiling` may change on this agent (the default when unnamed)."""
        return dict(self.ceilings).get(ceiling) or CeilingRules.default(ceiling)


@dataclass(frozen=True, slots=True)
class ApiKey:
    """A bearer key: who it is, which agents it may use, and its permission bounds."""

    name: str
    sha256: str
    agents: frozenset[str] | None = None  # None: every agent
    ceiling: Policy = "reject"
    policy: Policy = "reject"
    tokens_per_day: int | None = None  # its turns' tokens a UTC day (budgets.py); None: no cap
    usd_per_day: float | None = None  # its turns' cost a UTC day, in US dollars; None: no cap

    def allows(self, agent: str) -> bool:
        return self.agents is None or agent in self.agents


@dataclass(frozen=True, slots=True)
class WebPolicy:
    """Which Host names the gateway answers to, and which other browser origins it trusts.

    Both lists add to the defaults (see `guard.py`): the loopback names on the bound port,
    and the page's own origin. Entries are normalized when read (lower case, no default port).
    """

    allowed_hosts: tuple[str, ...] = ()  # "name" (any port) or "name:port"
    allowed_origins: tuple[str, ...] = ()  # "scheme://host[:port]"


@dataclass(frozen=True, slots=True)
class McpUrlPolicy:
    """What a remote client's http/sse MCP servers may reach (see remote/mcp_urls.py)."""

    allow_private: bool = False  # private and loopback addresses (refused by default)
    allowed_headers: tuple[str, ...] = ()  # header names passed besides the default rule


@dataclass(frozen=True, slots=True)
class GatewayConfig:
    host: str = "127.0.0.1"
    port: int = 8765
    # A SQLite file's path or a `postgresql://` URL; None: `gateway.sqlite3` in the state
    # directory. A URL may hold a password: show it only through `store.target.shown`.
    store: str | None = None
    # Where other replicas send a request for a conversation this one holds (a 307), e.g.
    # "http://10.0.0.5:8765"; None: http://HOST:PORT as bound (the host name for 0.0.0.0).
    advertise_url: str | None = None
    # A request for a conversation another replica holds: "forward" passes it there and
    # streams the answer back (the client's key goes with it); "redirect" answers 307 to
    # the holder's advertise_url (the client must reach every replica, and HTTP clients
    # drop `Authorization` on a redirect to another origin).
    cross_replica: CrossReplica = "forward"
    agents: tuple[AgentSpec, ...] = ()
    keys: tuple[ApiKey, ...] = ()
    # `[models]`: alias -> "agent" or "agent/model", e.g. ("gpt-4o", "agentao").
    models: tuple[tuple[str, str], ...] = ()
    prices: Prices = field(default_factory=Prices)  # `[prices]`: what a turn costs (prices.py)
    limits: Limits = field(default_factory=Limits)
    web: WebPolicy = field(default_factory=WebPolicy)
    mcp: McpUrlPolicy = field(default_factory=McpUrlPolicy)
    # Every agent process in a bubblewrap sandbox of its own (confine.py): "auto" where
    # bwrap runs here, "off" never. Where none runs, agents for keys below `all` are
    # refused unless `allow_unconfined_agents` (then they run unconfined, logged).
    agent_sandbox: AgentSandboxMode = "auto"
    allow_unconfined_agents: bool = False

    def ceiling_of(self, owner: str) -> Policy:
        """The ceiling of a key by name (`local`: all); a key no longer configured: reject."""
        if owner == LOCAL_NAME and not self.keys:
            return "all"
        return next((k.ceiling for k in self.keys if k.name == owner), "reject")

    def agent(self, name: str) -> AgentSpec | None:
        return next((a for a in self.agents if a.name == name), None)

    def check_bind(self) -> None:
        """Refuse to listen beyond loopback when no API key guards the server."""
        if not self.keys and self.host not in LOOPBACK_HOSTS:
            raise ConfigError(
                f"refusing to bind {self.host!r} without API keys: add [[keys]] to the config "
                "file, or bind 127.0.0.1"
            )


def policy_rank(policy: str) -> int:
    return POLICY_ORDER.index(policy)  # type: ignore[arg-type]


def check_policy(value: Any, where: str) -> Policy:
    if value not in POLICY_ORDER:
        raise ConfigError(f"{where}: {value!r} is not one of {', '.join(POLICY_ORDER)}")
    return value


def default_agent(store: str | None = None) -> AgentSpec:
    """Our own agent, with the same interpreter as the gateway. On a PostgreSQL store it
    keeps its sessions in that database too, so any replica's agent can load any."""
    env = ((STORE_URL_ENV, store),) if store and is_postgres_url(store) else ()
    command = (sys.executable, "-m", "agentao", "--acp")
    return AgentSpec("agentao", command, env=env, sandbox=our_agent_sandbox())


def our_agent_sandbox() -> AgentSandbox:
    """Our agent gets its own settings from the gateway's environment (provider, keys)."""
    return AgentSandbox(pass_env=OUR_AGENT_PASS_ENV)


def is_our_agent(command: tuple[str, ...]) -> bool:
    """`agentao --acp`, or `python -m agentao --acp`."""
    return os.path.basename(command[0]) == "agentao" or command[1:3] == ("-m", "agentao")


def parse_agent_option(option: str) -> AgentSpec:
    """`NAME=CMD ARGS` from `--agent`."""
    name, sep, command = option.partition("=")
    if not sep or not name.strip() or not command.strip():
        raise ConfigError(f"--agent {option!r}: expected NAME=COMMAND")
    argv = tuple(shlex.split(command))
    sandbox = our_agent_sandbox() if is_our_agent(argv) else AgentSandbox()
    return AgentSpec(name.strip(), argv, sandbox=sandbox)


def load_config(path: str | Path | None) -> GatewayConfig:
    """Read a TOML config file (or defaults when `path` is None)."""
    if path is None:
        return GatewayConfig()
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    return config_from_dict(data, where=str(path))


def config_from_dict(data: dict[str, Any], where: str = "config") -> GatewayConfig:
    _check_known(data, _TABLES, "tables", where)
    server = _table(data, "server", where)
    _check_known(server, _SERVER_SETTINGS, "[server] settings", where)
    try:
        limits = parse_limits(_table(data, "limits", where), where)
        prices = parse_prices(_table(data, "prices", where), where)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    agents = tuple(_agent(n, s, where) for n, s in _table(data, "agents", where).items())
    keys = tuple(_key(k, where) for k in _entries(data, "keys", where))
    if len({k.name for k in keys}) != len(keys):
        raise ConfigError(f"{where}: two keys share a name")
    return GatewayConfig(
        host=str(server.get("host", "127.0.0.1")),
        port=int(server.get("port", 8765)),
        store=server.get("store"),
        advertise_url=server.get("advertise_url"),
        cross_replica=_cross_replica(server.get("cross_replica", "forward"), where),
        agents=agents,
        keys=keys,
        models=_models(_table(data, "models", where), where),
        prices=prices,
        limits=limits,
        agent_sandbox=_agent_sandbox(server.get("agent_sandbox", "auto"), where),
        allow_unconfined_agents=_bool(server, "allow_unconfined_agents", where),
        web=web_policy(
            _strings(server, "allowed_hosts", where), _strings(server, "allowed_origins", where)
        ),
        mcp=_mcp_policy(server, where),
    )


def _models(table: dict[str, Any], where: str) -> tuple[tuple[str, str], ...]:
    """`[models]`: each alias and its target well-formed names (identifiers.py)."""
    from agentao.gateway.errors import BadRequest  # the HTTP layer, only when aliases exist
    from agentao.gateway.identifiers import check_model

    out = []
    for alias, target in table.items():
        if not isinstance(target, str):
            raise ConfigError(f"{where}: [models] {alias!r} must name an agent (a string)")
        try:
            check_model(alias, f"[models] {alias!r}")
            check_model(target, f"[models] {alias!r}")
        except BadRequest as exc:
            raise ConfigError(f"{where}: {exc.message}") from None
        out.append((alias, target))
    return tuple(out)


def check_aliases(config: GatewayConfig) -> None:
    """Every alias and price names a served agent, and no alias is an agent's own name
    (a misspelt price would leave an agent unpriced: `usd_per_day` would never refuse)."""
    agents = {a.name for a in config.agents}
    if stray := config.prices.unserved(agents):
        raise ConfigError(f"[prices] {stray[0]!r} names no served agent: {sorted(agents)}")
    for alias, target in config.models:
        if alias in agents or alias.split("/", 1)[0] in agents:
            raise ConfigError(f"[models] {alias!r} would hide the agent of that name")
        if target.split("/", 1)[0] not in agents:
            raise ConfigError(
                f"[models] {alias!r} names the agent {target.split('/', 1)[0]!r}, which is "
                f"not served (agents: {', '.join(sorted(agents))})"
            )


def _mcp_policy(server: dict[str, Any], where: str) -> McpUrlPolicy:
    allow_private = server.get("mcp_allow_private", False)
    if not isinstance(allow_private, bool):
        raise ConfigError(f"{where}: [server] mcp_allow_private must be true or false")
    names = _strings(server, "mcp_allowed_headers", where)
    return McpUrlPolicy(allow_private, tuple(n.lower() for n in names))


def _cross_replica(value: Any, where: str) -> CrossReplica:
    if value not in CROSS_REPLICA:
        raise ConfigError(
            f"{where}: [server] cross_replica {value!r} is not one of {', '.join(CROSS_REPLICA)}"
        )
    return value  # type: ignore[no-any-return]


def _agent_sandbox(value: Any, where: str) -> AgentSandboxMode:
    if value not in ("auto", "off"):
        raise ConfigError(f"{where}: [server] agent_sandbox {value!r} is not one of auto, off")
    return value  # type: ignore[no-any-return]


def _bool(table: dict[str, Any], key: str, where: str) -> bool:
    value = table.get(key, False)
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: [server] {key} must be true or false")
    return value


def web_policy(hosts: list[str], origins: list[str]) -> WebPolicy:
    """A `WebPolicy` from config or command-line entries, each checked and normalized."""
    try:
        return WebPolicy(
            tuple(dict.fromkeys(normalize_host(h) for h in hosts)),
            tuple(dict.fromkeys(normalize_origin(o) for o in origins)),
        )
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def with_overrides(
    config: GatewayConfig,
    *,
    agents: list[str] | None = None,
    host: str | None = None,
    port: int | None = None,
    allowed_hosts: list[str] | None = None,
    allowed_origins: list[str] | None = None,
    store: str | None = None,
    advertise_url: str | None = None,
) -> GatewayConfig:
    """Apply command-line options; with no agent anywhere, serve our own. The store:
    `store` (--store), else AGENTAO_STORE_URL, else the config file's."""
    extra = tuple(parse_agent_option(a) for a in agents or ())
    merged = tuple(a for a in config.agents if a.name not in {e.name for e in extra}) + extra
    web = config.web
    store = store or os.environ.get(STORE_URL_ENV) or config.store
    if is_postgres_url(store):
        try:
            check_store_url(str(store))
        except StoreUrlInvalid as exc:
            raise ConfigError(str(exc)) from None
    config = replace(
        config,
        agents=merged or (default_agent(store),),
        host=host if host is not None else config.host,
        port=port if port is not None else config.port,
        store=store,
        advertise_url=advertise_url or config.advertise_url,
        web=web_policy(
            [*web.allowed_hosts, *(allowed_hosts or ())],
            [*web.allowed_origins, *(allowed_origins or ())],
        ),
    )
    names = [a.name for a in config.agents]
    if len(set(names)) != len(names):
        raise ConfigError(f"agent names must be unique: {names}")
    check_aliases(config)
    return config


def _table(data: Any, key: str, where: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: [{key}] must be a table")
    return value


def _check_known(table: dict[str, Any], known: frozenset[str], what: str, where: str) -> None:
    unknown = set(table) - known
    if unknown:
        raise ConfigError(
            f"{where}: unknown {what} {sorted(unknown)} (known: {', '.join(sorted(known))})"
        )


def _entries(data: dict[str, Any], key: str, where: str) -> list[dict[str, Any]]:
    """An array of tables (`[[key]]`), each entry checked to be a table."""
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ConfigError(f"{where}: {key} must be an array of tables ([[{key}]])")
    return value


def _strings(table: dict[str, Any], key: str, where: str) -> list[str]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: [server] {key} must be a list of strings")
    return value


def _agent(name: str, spec: Any, where: str) -> AgentSpec:
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: [agents.{name}] must be a table")
    _check_known(spec, _AGENT_SETTINGS, f"[agents.{name}] settings", where)
    command = spec.get("command")
    if isinstance(command, str):
        command = shlex.split(command)
    if not command or not all(isinstance(c, str) for c in command):
        raise ConfigError(f"{where}: agents.{name}.command must be a string or list of strings")
    processes = int(spec.get("processes", 1))
    if processes < 1:
        raise ConfigError(f"{where}: agents.{name}.processes must be at least 1")
    env = spec.get("env", {})
    try:
        sandbox = (
            AgentSandbox.parse(spec["sandbox"], f"{where}: [agents.{name}.sandbox]")
            if "sandbox" in spec
            else our_agent_sandbox()
            if is_our_agent(tuple(command))
            else AgentSandbox()
        )
        ceilings = _ceilings(spec.get("ceilings", {}), f"{where}: [agents.{name}.ceilings")
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return AgentSpec(
        name=name,
        command=tuple(command),
        processes=processes,
        cwd=str(Path(spec.get("cwd", os.getcwd())).expanduser().resolve()),
        env=tuple((str(k), str(v)) for k, v in env.items()),
        sandbox=sandbox,
        ceilings=ceilings,
        protocol=_protocol(spec.get("protocol", "auto"), f"{where}: agents.{name}.protocol"),
        always_allow=_optional_bool(
            spec.get("always_allow"), f"{where}: agents.{name}.always_allow"
        ),
        busy=_busy(spec.get("busy", "reject"), f"{where}: agents.{name}.busy"),
    )


def _busy(value: Any, where: str) -> Busy:
    if value not in BUSY_CHOICES:
        raise ConfigError(f"{where} must be one of {', '.join(BUSY_CHOICES)}, not {value!r}")
    return value  # type: ignore[no-any-return]


def _optional_bool(value: Any, where: str) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise ConfigError(f"{where} must be true or false")
    return value


def _protocol(value: Any, where: str) -> int | None:
    """`auto` (v1 where the agent speaks it, else v2: agent_protocol.AUTO), `1` or `2`."""
    if str(value) not in AGENT_PROTOCOLS or isinstance(value, bool):
        raise ConfigError(f"{where} must be one of {', '.join(map(repr, AGENT_PROTOCOLS))}")
    return AGENT_PROTOCOLS[str(value)]


def _ceilings(table: Any, where: str) -> tuple[tuple[str, CeilingRules], ...]:
    """`[agents.NAME.ceilings.*]`; `where` names the table without its closing bracket."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where}] must be a table of ceilings")
    for ceiling in table:
        check_policy(ceiling, f"{where}]")
    return tuple((c, parse_rules(t, f"{where}.{c}]")) for c, t in table.items())


def _key(entry: dict[str, Any], where: str) -> ApiKey:
    name = entry.get("name")
    if not name:
        raise ConfigError(f"{where}: every [[keys]] entry needs a name")
    _check_known(entry, _KEY_SETTINGS, f"[[keys]] {name!r} settings", where)
    if str(name) in RESERVED_KEY_NAMES:
        raise ConfigError(
            f"{where}: a key may not be named {name!r}: that name is reserved for the local "
            "user without keys, whose objects it would own"
        )
    if "key" in entry:
        digest = hashlib.sha256(str(entry["key"]).encode()).hexdigest()
    elif "key_sha256" in entry:
        digest = str(entry["key_sha256"]).lower()
    else:
        raise ConfigError(f"{where}: key {name!r} needs `key` or `key_sha256`")
    agents = entry.get("agents")
    ceiling = check_policy(entry.get("ceiling", "reject"), f"{where}: key {name!r} ceiling")
    policy = check_policy(entry.get("policy", "reject"), f"{where}: key {name!r} policy")
    if policy_rank(policy) > policy_rank(ceiling):
        raise ConfigError(f"{where}: key {name!r} has a policy above its ceiling")
    budget = entry.get("tokens_per_day")
    if budget is not None and (type(budget) is not int or budget < 1):
        raise ConfigError(f"{where}: key {name!r} tokens_per_day must be a whole number above 0")
    usd = entry.get("usd_per_day")
    if usd is not None and (type(usd) not in (int, float) or not 0 < usd < float("inf")):
        raise ConfigError(f"{where}: key {name!r} usd_per_day must be a number above 0")
    return ApiKey(
        name=str(name),
        sha256=digest,
        agents=None if agents is None or "*" in agents else frozenset(agents),
        ceiling=ceiling,
        policy=policy,
        tokens_per_day=budget,
        usd_per_day=None if usd is None else float(usd),
    )


__all__ = [
    "AGENT_PROTOCOLS",
    "LOCAL_NAME",
    "LOOPBACK_HOSTS",
    "POLICY_ORDER",
    "RESERVED_KEY_NAMES",
    "WILDCARD_HOSTS",
    "AgentSpec",
    "ApiKey",
    "ConfigError",
    "GatewayConfig",
    "Limits",
    "McpUrlPolicy",
    "Policy",
    "WebPolicy",
    "check_aliases",
    "check_policy",
    "config_from_dict",
    "default_agent",
    "is_our_agent",
    "load_config",
    "parse_agent_option",
    "policy_rank",
    "web_policy",
    "with_overrides",
]
