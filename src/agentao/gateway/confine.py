"""Every agent process the gateway runs, confined by the operating system (bubblewrap).

Theory of operation. A key's ceiling is enforced where the action happens; for a third
party's agent that is only its own process, whose permission questions it may never
ask. So whatever an agent does, its process sees:

- the system (`/usr`, `/bin`, `/lib*`, `/etc`, `/opt`) and the runtime that runs it
  (the interpreter's prefixes and import path, the command's own directory) read-only;
- its workspace (the agent's `cwd` and its `[agents.NAME.sandbox] write` paths)
  writable, its `read` paths read-only, and nothing else of the host: not the
  gateway's config file, store, token or logs, not the operator's home; for the
  processes of a key ceiling that can approve no write (`reject`, `reads`) the `cwd`
  is read-only too: an agent that writes without asking (any ACP v2 agent calls no
  client `fs/*` the gateway could refuse) is held by the OS, not by its manners;
- a home of its own, `<state>/agents/NAME/home` (writable, kept across restarts: an
  agent's login or config lives there), a private `/tmp`, its own PID namespace, no
  capabilities, a user namespace (as root too: the agent runs as uid 1000 inside,
  which is still root's files outside), and it dies with the gateway;
- an environment that is an allowlist: locale and `PATH`, what the agent's config sets
  (`env`), and the gateway's variables its config names (`sandbox.pass_env`, globs);
- the network, which agents need for their model.

So a full shell from any key is, at worst, a shell inside one workspace. Our own agent
still sandboxes each command inside this one (a nested bubblewrap: measured and
documented in docs/security.md); as root the kernel refuses the nested `/proc`, and the
agent's probe falls back to a command sandbox without `/proc` (agent/sandbox.py).

Where bubblewrap cannot run, the gateway refuses agents for keys below `all` unless the
operator opts out (`[server] allow_unconfined_agents = true`); `all` runs unconfined
with a warning. `agentao doctor` says which.
"""

from __future__ import annotations

import fnmatch
import functools
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agentao.bwrap import resolver_mounts, system_mounts

log = logging.getLogger("agentao.gateway")

AgentSandboxMode = Literal["auto", "off"]
# Variables every agent gets (values from the gateway's environment); all else is named.
BASE_ENV = (
    "PATH",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "LC_COLLATE",
    "LC_NUMERIC",
    "LC_TIME",
    "TZ",
)
# Our agent's settings, passed to the default agent (`agentao serve` with no config):
# its provider, model, keys and limits, but never where the gateway keeps its state.
OUR_AGENT_PASS_ENV = ("LLM_PROVIDER", "AGENTAO_*", "*_API_KEY", "*_BASE_URL", "*_MODEL")
NEVER_PASSED = ("AGENTAO_HOME", "AGENTAO_CONFIG_DIR", "AGENTAO_STORE_URL", "XDG_*", "HOME")
# Our agent's variables that name a path: bound into the sandbox when the config sets them.
WRITABLE_PATH_VARS = ("AGENTAO_HOME",)
READABLE_PATH_VARS = ("AGENTAO_SCRIPT", "AGENTAO_CONFIG_DIR")
# As root, bwrap's user namespace maps this uid to root outside (files stay root's); a
# non-zero uid inside is what lets the agent's own command sandbox nest (docs/security.md).
SANDBOX_UID = 1000
PROBE_TIMEOUT = 10.0


class AgentSandboxError(ValueError):
    """An `[agents.NAME.sandbox]` table is malformed; the message says where."""


@dataclass(frozen=True, slots=True)
class AgentSandbox:
    """An agent's additions to its confinement (`[agents.NAME.sandbox]`)."""

    read: tuple[str, ...] = ()  # more paths it may read
    write: tuple[str, ...] = ()  # more paths it may write (roots a remote session may use)
    pass_env: tuple[str, ...] = ()  # gateway variables it gets (globs)

    @classmethod
    def parse(cls, table: Any, where: str) -> AgentSandbox:
        if not isinstance(table, dict):
            raise AgentSandboxError(f"{where} must be a table")
        unknown = set(table) - {"read", "write", "pass_env"}
        if unknown:
            raise AgentSandboxError(
                f"{where}: unknown settings {sorted(unknown)} (known: pass_env, read, write)"
            )
        return cls(
            read=_paths(table.get("read", []), f"{where}: read"),
            write=_paths(table.get("write", []), f"{where}: write"),
            pass_env=string_list(table.get("pass_env", []), f"{where}: pass_env"),
        )


@dataclass(frozen=True, slots=True)
class OuterStatus:
    available: bool
    reason: str = ""  # why not, when not


def probe(mode: AgentSandboxMode = "auto", bwrap: str = "bwrap") -> OuterStatus:
    """Whether agent processes can be confined here (run once per gateway)."""
    if mode == "off":
        return OuterStatus(False, '[server] agent_sandbox = "off"')
    return _probe(bwrap)


@functools.cache
def _probe(bwrap: str) -> OuterStatus:
    path = shutil.which(bwrap)
    if path is None:
        return OuterStatus(False, f"{bwrap} not found (install bubblewrap: apt install bubblewrap)")
    argv = [path, *_system(), *_isolation(), "--", "/bin/sh", "-c", "true"]
    try:
        done = subprocess.run(argv, env={}, capture_output=True, timeout=PROBE_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return OuterStatus(False, f"{path} could not run: {exc}")
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        last = detail[-1] if detail else f"exit code {done.returncode}"
        return OuterStatus(False, f"{path} failed: {last} (user namespaces may be disabled)")
    return OuterStatus(True)


def confine(
    command: Iterable[str],
    *,
    cwd: str,
    home: Path,
    env: Mapping[str, str],
    sandbox: AgentSandbox,
    environ: Mapping[str, str] = os.environ,
    read_only: bool = False,
) -> tuple[str, ...]:
    """`bwrap … -- COMMAND` for one agent process; bwrap starts it with the environment
    `agent_env` makes (`--clearenv`, `--setenv`), so start bwrap with an empty one.
    `read_only`: its workspace (`cwd`) is bound read-only (a read-only key ceiling's)."""
    argv = tuple(command)
    bwrap = shutil.which("bwrap")
    assert bwrap is not None, "probe() first"
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    inner = agent_env(env, sandbox, environ, home)
    workspace = [] if read_only else [cwd]
    writable = [*workspace, str(home), *sandbox.write, *_path_vars(inner, WRITABLE_PATH_VARS)]
    readable = [*runtime_paths(argv[0]), *sandbox.read, *_path_vars(inner, READABLE_PATH_VARS)]
    readable += [cwd] if read_only else []
    for path in _path_vars(inner, WRITABLE_PATH_VARS):
        Path(path).mkdir(parents=True, exist_ok=True, mode=0o700)
    args = [
        bwrap,
        *_system(),
        *_binds(readable, writable),
        *_isolation(),
        "--chdir",
        cwd,
        "--clearenv",
        *(arg for k, v in inner.items() for arg in ("--setenv", k, v)),
        "--",
        *argv,
    ]
    return tuple(args)


def agent_env(
    env: Mapping[str, str], sandbox: AgentSandbox, environ: Mapping[str, str], home: Path
) -> dict[str, str]:
    """The agent's whole environment: the base names, `pass_env` matches, its own `env`."""
    out = {n: environ[n] for n in BASE_ENV if n in environ}
    for name, value in environ.items():
        if _matches(name, sandbox.pass_env) and not _matches(name, NEVER_PASSED):
            out[name] = value
    out.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    out.update(HOME=str(home), TMPDIR="/tmp")
    out.update(env)
    return out


def runtime_paths(program: str) -> list[str]:
    """What running `program` needs beyond the system: our interpreter's prefixes and
    import path (an editable install's source among them), and the program's directory."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix}
    paths.update(p for p in sys.path if p and os.path.exists(p))
    found = shutil.which(program)
    if found:
        paths.add(os.path.dirname(os.path.realpath(found)))
        paths.add(os.path.dirname(os.path.abspath(found)))
    return sorted(p for p in paths if not _under_system(p))


def _system() -> list[str]:
    return [
        *system_mounts(),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
        *resolver_mounts(),
    ]


def _binds(readable: list[str], writable: list[str]) -> list[str]:
    binds = [(os.path.realpath(p), "--ro-bind") for p in readable]
    binds += [(os.path.realpath(p), "--bind") for p in writable]
    args: list[str] = []
    # Parents before children, so a writable root inside a read-only one stays writable.
    for path, flag in sorted(set(binds), key=lambda b: (len(Path(b[0]).parts), b[1] == "--bind")):
        if os.path.exists(path):
            args += [flag, path, path]
    return args


def _isolation() -> list[str]:
    uid = ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)] if os.getuid() == 0 else []
    return [
        "--unshare-user",
        *uid,
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--cap-drop",
        "ALL",
    ]


def _path_vars(env: Mapping[str, str], names: tuple[str, ...]) -> list[str]:
    return [env[n] for n in names if os.path.isabs(env.get(n, ""))]


def _under_system(path: str) -> bool:
    real = Path(os.path.realpath(path))
    return any(real.is_relative_to(d) for d in ("/usr", "/etc", "/opt") if real.exists())


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _paths(value: Any, where: str) -> tuple[str, ...]:
    names = string_list(value, where)
    return tuple(str(Path(p).expanduser().resolve()) for p in names)


def string_list(value: Any, where: str) -> tuple[str, ...]:
    """A config list of non-empty strings, or AgentSandboxError naming `where`."""
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise AgentSandboxError(f"{where} must be a list of strings")
    return tuple(value)


__all__ = [
    "OUR_AGENT_PASS_ENV",
    "AgentSandbox",
    "AgentSandboxError",
    "AgentSandboxMode",
    "OuterStatus",
    "agent_env",
    "confine",
    "probe",
    "runtime_paths",
    "string_list",
]
