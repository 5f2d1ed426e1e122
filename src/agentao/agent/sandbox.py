"""The shell sandbox: commands confined by the operating system (bubblewrap on Linux).

Theory of operation
-------------------
The permission engine decides *whether to ask*; this module decides *what a command
can reach* once it runs. A `Confinement` names it: the paths a command may write,
the paths it may only read, and whether it has a network. `Sandbox.argv` turns one
into a `bwrap` command line:

- the system (`/usr`, `/bin`, `/lib*`, `/etc`, `/opt`, …) read-only; `/proc` of a new
  PID namespace, a minimal `/dev`, a private `/tmp`, an empty `$HOME` (tmpfs);
- the confinement's writable roots bound read-write, its read-only roots read-only,
  nothing else of the host (no home, no `/run`, no other users' files);
- every namespace unshared (no network unless granted), every capability dropped (as
  root too: a capable process could remount a read-only bind), `--new-session` (no
  TIOCSTI into the agent's terminal), `--die-with-parent`;
- a scrubbed environment given with `--clearenv`/`--setenv`; bwrap itself is started
  with an *empty* environment, because its PID 1 inside the sandbox keeps the
  environment it was started with, readable as `/proc/1/environ`.

When the command's shell exits, bwrap's PID 1 exits and the kernel kills whatever
the command left in its PID namespace; when the agent dies, `--die-with-parent` does
the same. So nothing a command starts outlives it.

`Sandbox.status()` probes once per process whether bwrap can run here (it needs user
namespaces, or root). Where it cannot, the engine asks before every shell command
and the reason is logged and shown by `agentao doctor`.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from agentao.credentials import is_secret_name

log = logging.getLogger(__name__)

SandboxMode = Literal["auto", "off"]
SANDBOX_ENV = "AGENTAO_SANDBOX"  # auto (default) | off

# Read-only system directories mounted into every sandbox (a symlink, as /bin is on
# merged-/usr systems, is recreated as the same symlink).
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
# What a DNS lookup needs when the network is granted (resolv.conf may point here).
RESOLVER_DIRS = ("/run/systemd/resolve",)
# Variables a command inherits, by exact name (an allowlist: a prefix such as `LC_*` would
# let any variable so named through); everything else (keys, tokens, the agent's own
# settings) stays out. More can be named in permissions.json ("sandbox": {"env": […]}).
ENV_PASSTHROUGH = (
    "PATH",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "TZ",
    "USER",
    "LOGNAME",
)
# The locale variables (POSIX and glibc's), passed only with a value shaped like a locale
# name: they name files the C library opens, so a path or a long blob stays out.
LOCALE_ENV = (
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_COLLATE",
    "LC_MESSAGES",
    "LC_NUMERIC",
    "LC_TIME",
    "LC_MONETARY",
    "LC_PAPER",
    "LC_NAME",
    "LC_ADDRESS",
    "LC_TELEPHONE",
    "LC_MEASUREMENT",
    "LC_IDENTIFICATION",
)
MAX_LOCALE_CHARS = 64  # a longer locale value is not passed
# `C`, `POSIX`, `C.UTF-8`, `en_US.UTF-8@euro`; LANGUAGE is a `:`-separated list of them.
_LOCALE_VALUE = re.compile(r"[A-Za-z][A-Za-z0-9_.@+-]*(?::[A-Za-z][A-Za-z0-9_.@+-]*)*")
# Git inside the sandbox never starts a file-system monitor named by a repository's
# config (textconv and external diff are switched off on the allowlisted commands).
GIT_ENV = {
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "core.fsmonitor",
    "GIT_CONFIG_VALUE_0": "false",
}
PROBE_TIMEOUT = 10.0  # seconds for the one-off "can bwrap run here" check


class SandboxUnavailable(RuntimeError):
    """A confined command was asked for where no sandbox can run (fail closed)."""


@dataclass(frozen=True, slots=True)
class SandboxSettings:
    """How commands are confined: `auto` uses bwrap when it can run here (the status says
    why not when it cannot), `off` never confines (every shell command then asks)."""

    mode: SandboxMode = "auto"
    bwrap: str = "bwrap"

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> SandboxSettings:
        raw = env.get(SANDBOX_ENV, "").strip().lower() or "auto"
        if raw not in ("auto", "off"):
            raise ValueError(f"{SANDBOX_ENV}={raw!r}: expected auto or off")
        return cls(mode=raw)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class SandboxOptions:
    """The user's additions, from permissions.json `"sandbox"`: extra paths a command
    may read or write, network for every command, and variables passed through."""

    read: tuple[Path, ...] = ()
    write: tuple[Path, ...] = ()
    network: bool = False
    env: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Confinement:
    """What one command may reach: the only paths it sees besides the system."""

    writable: tuple[Path, ...] = ()
    read_only: tuple[Path, ...] = ()
    network: bool = False
    env_names: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line for the model and the user: what the command could not do."""
        writes = ", ".join(map(str, self.writable)) or "nothing"
        net = "network allowed" if self.network else "no network"
        return f"sandboxed: writes only to {writes}; {net}; home directory hidden"


@dataclass(frozen=True, slots=True)
class SandboxStatus:
    available: bool
    backend: str  # "bwrap" or "none"
    reason: str = ""  # why it is not available (empty when it is)


@dataclass(slots=True)
class Sandbox:
    """Builds confined command lines; one per agent process (the probe is cached)."""

    settings: SandboxSettings = field(default_factory=SandboxSettings)
    known: SandboxStatus | None = None  # the probe's answer, once asked

    def status(self) -> SandboxStatus:
        if self.known is None:
            off = self.settings.mode == "off"
            self.known = (
                SandboxStatus(False, "none", f"{SANDBOX_ENV}=off")
                if off
                else _probe(self.settings.bwrap)
            )
        return self.known

    @property
    def available(self) -> bool:
        return self.status().available

    def argv(
        self,
        command: str,
        cwd: Path,
        confinement: Confinement,
        environ: Mapping[str, str] | None = None,
    ) -> list[str]:
        """`bwrap … -- bash -c COMMAND`, to be started with an empty environment."""
        status = self.status()
        if not status.available:
            raise SandboxUnavailable(f"no sandbox can run here: {status.reason}")
        bwrap = shutil.which(self.settings.bwrap)
        assert bwrap is not None  # the probe found it
        env = sandbox_env(confinement, os.environ if environ is None else environ)
        return [
            bwrap,
            *_mounts(confinement, env["HOME"]),
            *_isolation(confinement),
            "--chdir",
            str(cwd),
            "--clearenv",
            *(arg for k, v in env.items() for arg in ("--setenv", k, v)),
            "--",
            _shell(),
            "-c",
            command,
        ]


def sandbox_env(confinement: Confinement, environ: Mapping[str, str]) -> dict[str, str]:
    """The command's environment: the pass-through names, a private HOME and TMPDIR."""
    names = (*ENV_PASSTHROUGH, *confinement.env_names)
    env = {n: environ[n] for n in names if n in environ and not is_secret_name(n)}
    env.update({n: environ[n] for n in LOCALE_ENV if is_locale_value(environ.get(n, ""))})
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    home = environ.get("HOME") or "/tmp/home"
    env["HOME"] = home if os.path.isabs(home) and home != "/" else "/tmp/home"
    env["TMPDIR"] = "/tmp"
    env.update(GIT_ENV)
    return env


def is_locale_value(value: str) -> bool:
    """Whether `value` looks like a locale name (no `/`, bounded), fit to pass on."""
    return len(value) <= MAX_LOCALE_CHARS and _LOCALE_VALUE.fullmatch(value) is not None


def _mounts(confinement: Confinement, home: str) -> list[str]:
    args: list[str] = []
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    if not Path(home).is_relative_to("/tmp"):
        args += ["--tmpfs", home]  # an empty, throw-away home
    if confinement.network:
        args += [a for d in RESOLVER_DIRS for a in ("--ro-bind-try", d, d)]
    binds = [(p, "--ro-bind") for p in confinement.read_only]
    binds += [(p, "--bind") for p in confinement.writable]
    # Parents before children, so a writable root inside a read-only one stays writable.
    for path, flag in sorted(binds, key=lambda b: (len(b[0].parts), b[1] == "--bind")):
        if path.exists():
            args += [flag, str(path), str(path)]
    return args


def _isolation(confinement: Confinement) -> list[str]:
    args = ["--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if confinement.network:
        args.append("--share-net")
    return args


@functools.cache
def _shell() -> str:
    found = shutil.which("bash", path="/usr/bin:/bin")
    return os.path.realpath(found) if found else "/bin/sh"


@functools.cache
def _probe(bwrap: str) -> SandboxStatus:
    """Run a trivial command confined the way real ones are: the only reliable test."""
    path = shutil.which(bwrap)
    if path is None:
        reason = f"{bwrap} not found (install bubblewrap: apt install bubblewrap)"
        log.warning("shell sandbox unavailable: %s; every shell command will ask", reason)
        return SandboxStatus(False, "none", reason)
    probe = Confinement()
    argv = [path, *_mounts(probe, "/tmp/home"), *_isolation(probe), "--", _shell(), "-c", "true"]
    try:
        done = subprocess.run(argv, env={}, capture_output=True, timeout=PROBE_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        reason = f"{path} could not run: {exc}"
    else:
        if done.returncode == 0:
            return SandboxStatus(True, "bwrap")
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        reason = f"{path} failed: {detail[-1] if detail else f'exit code {done.returncode}'}"
        reason += " (user namespaces may be disabled here)"
    log.warning("shell sandbox unavailable: %s; every shell command will ask", reason)
    return SandboxStatus(False, "none", reason)


def existing(paths: Iterable[Path]) -> tuple[Path, ...]:
    """`paths` resolved, without duplicates or paths that do not exist."""
    out: list[Path] = []
    for path in paths:
        real = Path(os.path.realpath(os.path.expanduser(path)))
        if real.exists() and real not in out:
            out.append(real)
    return tuple(out)


__all__ = [
    "ENV_PASSTHROUGH",
    "LOCALE_ENV",
    "MAX_LOCALE_CHARS",
    "SANDBOX_ENV",
    "Confinement",
    "Sandbox",
    "SandboxOptions",
    "SandboxSettings",
    "SandboxStatus",
    "SandboxUnavailable",
    "existing",
    "is_locale_value",
    "sandbox_env",
]
