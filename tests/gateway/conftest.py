"""A live gateway on 127.0.0.1 in a background thread, in front of real agent processes.

    gw = gateway_factory(script=[...])      # our agent (`python -m agentao --acp`), scripted
    client = gw.openai()                    # the real `openai` SDK, pointed at it
    gw.gateway                              # the running `Gateway` (pools, store) for checks

The uvicorn server runs in its own thread and event loop, so tests may use the
synchronous SDK, httpx and WebSocket clients without blocking it.

`served_gateway` is `agentao serve` itself, a subprocess with an API key, for what
only a process of its own shows: its memory and its log lines.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Coroutine, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import httpx
import openai
import pytest
import uvicorn

from agentao.gateway.app import create_app
from agentao.gateway.auth import KEY_PROTOCOL, WS_PROTOCOL
from agentao.gateway.config import (
    AgentSpec,
    ApiKey,
    GatewayConfig,
    Limits,
    McpUrlPolicy,
    WebPolicy,
)
from agentao.gateway.http11 import GatewayHttpProtocol
from agentao.gateway.login import login_url
from agentao.gateway.logs import uvicorn_log_config
from agentao.gateway.serving import GatewayServer
from agentao.local_token import token_for_url

T = TypeVar("T")
OUR_AGENT = (sys.executable, "-m", "agentao", "--acp")

# A script for our agent's scripted provider. Responses are used once per session, in
# order; one with `match` only for a prompt containing that word. So on one session the
# plain answers come as "Answer one.", "Answer two.", ... which is how tests see that a
# conversation kept its session.
PLAN = [
    {"content": "Write hello.txt", "status": "in_progress"},
    {"content": "Report back", "status": "pending"},
]
DEFAULT_SCRIPT: list[dict[str, Any]] = [
    {"match": "slow", "text": {"repeat": "tick ", "count": 150}, "delay": 0.02},
    {"match": "brief", "text": {"repeat": "tock ", "count": 40}, "delay": 0.005},
    {
        "match": "write",
        "thought": "I will write the file.",
        "tool_calls": [
            {"name": "todo_write", "arguments": {"todos": PLAN}},
            {"name": "write_file", "arguments": {"file_path": "hello.txt", "content": "hi\n"}},
        ],
    },
    {"match": "write", "text": "Wrote hello.txt."},
    {
        "match": "read",
        "tool_calls": [{"name": "read_file", "arguments": {"file_path": "notes.txt"}}],
    },
    {"match": "read", "text": "Read notes.txt."},
    {"match": "refuse", "text": "No.", "finish": "content_filter"},
    {"match": "cutoff", "text": "Cut", "finish": "length"},
    {"thought": "Thinking it over.", "text": "Answer one."},
    {"text": "Answer two."},
    {"text": "Answer three."},
    {"text": "Answer four."},
]


class LiveGateway:
    def __init__(
        self, config: GatewayConfig, store: Path | str, local_token: str | None = None
    ) -> None:
        # In-process tests of the routes run keyless gateways open (local_token None), as
        # an embedding may; `agentao serve` always gives one its token (ServedGateway).
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        # Where other replicas on a shared store reach this one: the port it is bound to.
        config = replace(config, advertise_url=config.advertise_url or self.url)
        self.config = config
        self.local_token = local_token
        self.store = str(store)  # a SQLite file or a PostgreSQL URL
        self.app = create_app(replace(config, store=str(store)), local_token=local_token)
        server_config = uvicorn.Config(
            self.app,
            log_level="warning",
            log_config=uvicorn_log_config(),  # as `agentao serve` logs
            access_log=False,
            http=GatewayHttpProtocol,  # as `agentao serve` runs
            timeout_graceful_shutdown=2,
        )
        self._server = _Server(server_config)
        self._thread: threading.Thread | None = None

    @property
    def gateway(self) -> Any:
        return self.app.state.gateway

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def openai(self, key: str | None = None, *, timeout: float = 30) -> openai.OpenAI:
        key = key or self.local_token or "unused"
        return openai.OpenAI(base_url=f"{self.url}/v1", api_key=key, max_retries=0, timeout=timeout)

    def http(self, key: str | None = None) -> httpx.Client:
        key = key or self.local_token
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def ws_url(self, path: str) -> str:
        return f"ws://127.0.0.1:{self.port}{path}"

    def login_link(self) -> str:
        """A one-time web UI login link, as `agentao serve` prints (needs a local token)."""
        login = self.gateway.auth.login
        assert login is not None, "a login link needs a keyless gateway with a local token"
        return login_url(self.url, login.new_code())

    def start(self) -> LiveGateway:
        self._thread = threading.Thread(target=self._server.serve_until_stopped, args=(self._sock,))
        self._thread.start()
        self._server.ready.wait()  # set once serving, or once the server gave up
        if not self._server.started:
            raise RuntimeError("the gateway did not start")
        return self

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on the gateway's event loop, and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.gateway.loop).result()

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=15)
        self._sock.close()

    def agent_pid(self, agent: str = "agentao", index: int = 0) -> int:
        client = self.gateway.pools[agent].workers[index].client
        assert client is not None and client.process is not None
        return client.process.pid

    def wait_live(self, agent: str = "agentao") -> None:
        """Wait until every process of `agent` runs (woken by the pool at each change)."""
        pool = self.gateway.pools[agent]
        self.run(pool.wait_until(lambda: pool.live == len(pool.workers)))


class _Server(GatewayServer):
    """uvicorn's server, saying when it serves (an event, not a flag to poll)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self.ready.set()

    def serve_until_stopped(self, sock: socket.socket) -> None:
        try:
            self.run(sockets=[sock])
        finally:
            self.ready.set()  # a server that failed to start wakes the test too


def prepare_home(home: Path) -> None:
    """Create the agent's database before several agent processes open it at once:
    store/sqlite.py migrates outside its write lock, so two processes opening a fresh
    file race ("table ... already exists"). Reported; remove once migrations are atomic."""
    from agentao.store.paths import DATABASE_NAME
    from agentao.store.sessions import open_session_store

    home.mkdir(parents=True, exist_ok=True)
    open_session_store(home / DATABASE_NAME).db.close()


def scripted_spec(
    tmp: Path, script: list[dict[str, Any]] | None = None, name: str = "agentao", **kw: Any
) -> AgentSpec:
    """Our agent with the scripted provider; state and workspace under `tmp`."""
    tmp.mkdir(parents=True, exist_ok=True)
    script_path = tmp / f"{name}-script.json"
    script_path.write_text(json.dumps({"responses": script or DEFAULT_SCRIPT}))
    work = tmp / "work"
    work.mkdir(exist_ok=True)
    (work / "notes.txt").write_text("remember the milk\n")
    home = tmp / "agent-home"
    prepare_home(home)
    # The agent asks before reading or writing files, so every policy has something to decide.
    rules = [{"action": "ask", "tool": "write_file"}, {"action": "ask", "tool": "read_file"}]
    (home / "permissions.json").write_text(json.dumps({"rules": rules}))
    env = (
        ("AGENTAO_HOME", str(home)),
        ("LLM_PROVIDER", "SCRIPTED"),
        ("AGENTAO_SCRIPT", str(script_path)),
    )
    return AgentSpec(name, OUR_AGENT, cwd=str(work), env=env, **kw)


def llm_spec(tmp: Path, llm_env: dict[str, str], name: str = "agentao") -> AgentSpec:
    """Our agent talking to a fake OpenAI-compatible LLM on loopback."""
    work = tmp / "work"
    work.mkdir(parents=True, exist_ok=True)
    prepare_home(tmp / "agent-home")
    env = (("AGENTAO_HOME", str(tmp / "agent-home")), *llm_env.items())
    return AgentSpec(name, OUR_AGENT, cwd=str(work), env=env)


@pytest.fixture(scope="session", autouse=True)
def gateway_state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The state directory of the gateways these tests run in-process (agents' homes
    among it), never the real one of whoever runs the tests."""
    state = tmp_path_factory.mktemp("gateway-state")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENTAO_HOME", str(state))
        yield state


@pytest.fixture
def gateway_store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The store `gateway_factory` serves from by default: a SQLite file, or with
    `@ON_EACH_STORE` also a new database on the session's real PostgreSQL server.
    `AGENTAO_TEST_STORE=postgres` makes PostgreSQL the default for every test."""
    if getattr(request, "param", DEFAULT_TEST_STORE) == "postgres":
        return request.getfixturevalue("pg_url")
    return str(tmp_path / "gateway.sqlite3")


@pytest.fixture
def gateway_factory(tmp_path: Path, gateway_store: str) -> Iterator[Any]:
    started: list[LiveGateway] = []

    def make(
        *,
        agents: tuple[AgentSpec, ...] | None = None,
        script: list[dict[str, Any]] | None = None,
        keys: tuple[ApiKey, ...] = (),
        limits: Limits | None = None,
        processes: int = 1,
        store: Path | str | None = None,  # a SQLite file or a PostgreSQL URL
        web: WebPolicy | None = None,
        mcp: McpUrlPolicy | None = None,
        local_token: str | None = None,  # a keyless gateway's token, as `serve` gives one
        **settings: Any,  # GatewayConfig's other fields (agent_sandbox, ...)
    ) -> LiveGateway:
        specs = agents or (scripted_spec(tmp_path, script, processes=processes),)
        config = GatewayConfig(
            agents=specs,
            keys=keys,
            limits=limits or Limits(),
            web=web or WebPolicy(),
            mcp=mcp or McpUrlPolicy(),
            **settings,
        )
        live = LiveGateway(config, store or gateway_store, local_token).start()
        started.append(live)
        return live

    yield make
    for live in started:
        live.stop()


@pytest.fixture(scope="module")
def shared_gateway(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveGateway]:
    """One gateway for the tests that only need a well-behaved agent (fast); on SQLite, or
    with `@SHARED_ON_EACH_STORE` also on a PostgreSQL database of its own."""
    tmp = tmp_path_factory.mktemp("shared-gateway")
    store: Path | str = tmp / "gateway.sqlite3"
    if getattr(request, "param", DEFAULT_TEST_STORE) == "postgres":
        store = request.getfixturevalue("postgres_server").create_database()
    config = GatewayConfig(agents=(scripted_spec(tmp, processes=2),))
    live = LiveGateway(config, store).start()
    yield live
    live.stop()


DEFAULT_TEST_STORE = os.environ.get("AGENTAO_TEST_STORE", "sqlite")
# Tests that exercise the store end to end run on each backend: SQLite, and a database
# on the session's real PostgreSQL server.
GATEWAY_STORES = ("sqlite", "postgres")
ON_EACH_STORE = pytest.mark.parametrize("gateway_store", GATEWAY_STORES, indirect=True)
SHARED_ON_EACH_STORE = pytest.mark.parametrize("shared_gateway", GATEWAY_STORES, indirect=True)


class ServedGateway:
    """`agentao serve --config FILE --log-level debug` in a subprocess; stderr kept line by line.

    Its state directory is `tmp/home` unless `home` names another (replicas share one, and
    so the keyless gateway's local token). Without keys, `token` is that token, read from
    the state directory as `agentao run` reads it, and the helpers send it."""

    this_test: list[ServedGateway] = []  # started by the running test: its log if it fails
    LOG_LINES_ON_FAILURE = 300

    def __init__(
        self, tmp: Path, config_text: str, home: Path | None = None, *, wait: bool = True
    ) -> None:
        """Started, and (unless `wait` is false: then `ready()` waits) serving."""
        self.home = home or tmp / "home"
        config = tmp / "gateway.toml"
        config.write_text(config_text)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        command = [sys.executable, "-m", "agentao", "serve", "--config", str(config)]
        command += ["--port", str(self.port), "--log-level", "debug"]
        env = {**os.environ, "AGENTAO_HOME": str(self.home)}
        self.proc = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        self.lines: list[str] = []
        ServedGateway.this_test.append(self)
        self._seen = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        if wait:
            self.ready()

    def ready(self) -> ServedGateway:
        """Once it serves (its startup logged as complete)."""
        self.wait_for_line("Application startup complete")
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def token(self) -> str | None:
        """The local token of a keyless gateway (None with keys: no file was made)."""
        return token_for_url(self.url, self.home)

    @property
    def auth(self) -> dict[str, str]:
        """The headers that authenticate as the local user (nothing with keys)."""
        token = self.token
        return {"Authorization": f"Bearer {token}"} if token else {}

    @property
    def ws_protocols(self) -> list[str]:
        """A task stream's subprotocols, with the local token as the key (keyless only)."""
        token = self.token
        return [WS_PROTOCOL, *([key_protocol(token)] if token else [])]

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._seen:
                self.lines.append(line)
                self._seen.notify_all()
        with self._seen:
            self.lines.append("<exited>")
            self._seen.notify_all()

    def wait_for_line(self, text: str, timeout: float = 30) -> str:
        """The first stderr line containing `text` (waits for it to be written)."""

        def found() -> str | None:
            return next((line for line in self.lines if text in line or line == "<exited>"), None)

        with self._seen:
            line = self._seen.wait_for(found, timeout)
        assert line and line != "<exited>", f"no log line with {text!r}:\n{''.join(self.lines)}"
        return line

    def peak_rss_kib(self) -> int:
        """VmHWM: the most resident memory the gateway process has had so far."""
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        line = next(x for x in status.splitlines() if x.startswith("VmHWM:"))
        return int(line.split()[1])

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=20)

    @staticmethod
    def stop_all(served: list[ServedGateway]) -> None:
        """Stop each that still runs, all at once (each one's orderly stop takes a while)."""
        running = [s for s in served if s.proc.poll() is None]
        for s in running:
            s.proc.send_signal(signal.SIGINT)
        for s in running:
            s.proc.wait(timeout=20)

    def kill(self) -> None:
        """SIGKILL, as a crash would: nothing of the gateway runs after it. (Reaped at once:
        a zombie still has its /proc entry, and would pass for alive.)"""
        self.proc.kill()
        self.proc.wait(timeout=20)

    def openai(self, key: str | None = None) -> openai.OpenAI:
        key = key or self.token or "unused"
        return openai.OpenAI(base_url=f"{self.url}/v1", api_key=key, max_retries=0, timeout=30)


def key_protocol(key: str) -> str:
    """A key (or a keyless gateway's local token) as a WebSocket subprotocol."""
    return KEY_PROTOCOL + base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")


def served_config(tmp: Path, script: list[dict[str, Any]] | None = None) -> str:
    """A config for `ServedGateway`: our scripted agent, no keys (loopback only)."""
    path = tmp / "script.json"
    path.write_text(json.dumps({"responses": script or DEFAULT_SCRIPT}))
    return f"""
[agents.agentao]
command = ["{sys.executable}", "-m", "agentao", "--acp"]
cwd = "{tmp}"
env = {{ LLM_PROVIDER = "SCRIPTED", AGENTAO_SCRIPT = "{path}" }}
"""


SERVED_KEY = "sk-served-0123456789abcdef"


@pytest.fixture(scope="session")
def served_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedGateway]:
    """One `agentao serve` process with one key and a 1 MiB body limit."""
    tmp = tmp_path_factory.mktemp("served")
    script = tmp / "script.json"
    script.write_text(json.dumps({"responses": DEFAULT_SCRIPT}))
    served = ServedGateway(
        tmp,
        f"""
[limits]
max_request_bytes = 1048576

[agents.agentao]
command = ["{sys.executable}", "-m", "agentao", "--acp"]
cwd = "{tmp}"
env = {{ LLM_PROVIDER = "SCRIPTED", AGENTAO_SCRIPT = "{script}" }}

[[keys]]
name = "alice"
key = "{SERVED_KEY}"
ceiling = "all"
""",
    )
    yield served
    served.stop()


def pytest_runtest_setup(item: pytest.Item) -> None:
    ServedGateway.this_test.clear()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed test's report carries the logs of the gateway processes it started: a
    failure seen once in CI can be read, not only guessed at."""
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    for served in ServedGateway.this_test:
        tail = "".join(served.lines[-ServedGateway.LOG_LINES_ON_FAILURE :])
        report.sections.append((f"agentao serve on port {served.port}: its last lines", tail))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Agent processes start in ~0.2 s; a hung test should still fail, not stall CI.
    for item in items:
        if "gateway" in str(item.fspath) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(60))


__all__ = [
    "DEFAULT_SCRIPT",
    "GATEWAY_STORES",
    "ON_EACH_STORE",
    "SERVED_KEY",
    "SHARED_ON_EACH_STORE",
    "LiveGateway",
    "ServedGateway",
    "key_protocol",
    "llm_spec",
    "scripted_spec",
    "served_config",
]
