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

The workspace roots are the session's pinned ones (`agent/roots.py`): `Sandbox.command`
opens each without following a link, checks it is still the directory pinned when the
session opened, and binds that descriptor (`--bind-fd`, passed with `pass_fds`), so the
kernel mounts exactly what was checked even if the path is swapped a moment later. A
command that goes through the editor's terminal cannot take descriptors: `Sandbox.argv`
checks each root immediately before it builds the path binds, and refuses on a swap.

`Sandbox.status()` probes once per process whether bwrap can run here (it needs user
namespaces, or root), and whether it has `--bind-fd` (bwrap ≥ 0.8; without it, path
binds with the check). Where it cannot run, the engine asks before every shell command
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

from agentao.agent.roots import PinnedDir
from agentao.bwrap import resolver_mounts, system_mounts
from agentao.credentials import is_secret_name

log = logging.getLogger(__name__)

SandboxMode = Literal["auto", "off"]
SANDBOX_ENV = "AGENTAO_SANDBOX"  # auto (default) | off

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
PROBE_MOUNT = "/mnt/agentao-probe"  # where the --bind-fd probe binds a descriptor


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
    # The session's pinned roots: a bind of one of these paths binds the checked directory.
    pinned: tuple[PinnedDir, ...] = ()

    def pinned_at(self, path: Path) -> PinnedDir | None:
        return next((d for d in self.pinned if d.path == path), None)

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
    # False: commands get no /proc. Inside a gateway's sandbox started by root (an outer
    # bwrap, gateway/confine.py), the kernel refuses a nested bwrap its own /proc mount,
    # while every other confinement nests; commands then run without /proc.
    proc: bool = True
    bind_fd: bool = False  # bwrap takes --bind-fd / --ro-bind-fd (binds a checked descriptor)


@dataclass(slots=True)
class SandboxedCommand:
    """A bwrap command line and the descriptors it binds (pass them with `pass_fds`,
    close them once the process started)."""

    argv: list[str]
    fds: tuple[int, ...] = ()

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = ()


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
        """`bwrap … -- bash -c COMMAND`, to be started with an empty environment, for a
        runner that cannot pass descriptors (the editor's terminal): each pinned root is
        checked right here and bound by path (RootReplaced on a swap)."""
        return self._build(command, cwd, confinement, environ, None)

    def command(
        self,
        command: str,
        cwd: Path,
        confinement: Confinement,
        environ: Mapping[str, str] | None = None,
    ) -> SandboxedCommand:
        """Like `argv`, with each pinned root bound by a checked descriptor where bwrap
        can (`--bind-fd`); the caller passes and then closes `fds`."""
        fds: list[int] | None = [] if self.status().bind_fd else None
        try:
            argv = self._build(command, cwd, confinement, environ, fds)
        except BaseException:
            SandboxedCommand([], tuple(fds or ())).close()
            raise
        return SandboxedCommand(argv, tuple(fds or ()))

    def _build(
        self,
        command: str,
        cwd: Path,
        confinement: Confinement,
        environ: Mapping[str, str] | None,
        fds: list[int] | None,
    ) -> list[str]:
        status = self.status()
        if not status.available:
            raise SandboxUnavailable(f"no sandbox can run here: {status.reason}")
        bwrap = shutil.which(self.settings.bwrap)
        assert bwrap is not None  # the probe found it
        env = sandbox_env(confinement, os.environ if environ is None else environ)
        return [
            bwrap,
            *_mounts(confinement, env["HOME"], status.proc, fds),
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


def _mounts(
    confinement: Confinement, home: str, proc: bool = True, fds: list[int] | None = None
) -> list[str]:
    args = system_mounts()
    args += ["--proc", "/proc"] if proc else []
    args += ["--dev", "/dev", "--tmpfs", "/tmp"]
    if not Path(home).is_relative_to("/tmp"):
        args += ["--tmpfs", home]  # an empty, throw-away home
    if confinement.network:
        args += resolver_mounts()
    binds = [(p, "--ro-bind") for p in confinement.read_only]
    binds += [(p, "--bind") for p in confinement.writable]
    # Parents before children, so a writable root inside a read-only one stays writable.
    for path, flag in sorted(binds, key=lambda b: (len(b[0].parts), b[1] == "--bind")):
        pinned = confinement.pinned_at(path)
        if pinned is not None:
            args += _pinned_bind(pinned, flag, fds)
        elif path.exists():
            args += [flag, str(path), str(path)]
    return args


def _pinned_bind(pinned: PinnedDir, flag: str, fds: list[int] | None) -> list[str]:
    """Bind the directory pinned at `pinned.path`, or RootReplaced: by a checked
    descriptor when `fds` collects them, else by path right after the check."""
    if fds is None:
        pinned.check()
        return [flag, str(pinned.path), str(pinned.path)]
    fds.append(pinned.open())
    return [f"{flag}-fd", str(fds[-1]), str(pinned.path)]


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
    reason = _try(path, proc=True)
    if not reason:
        return SandboxStatus(True, "bwrap", bind_fd=_probe_bind_fd(_probe_argv(path, True)))
    if not _try(path, proc=False):  # nested in a sandbox that keeps /proc to itself
        log.warning("shell sandbox without /proc: %s", reason)
        bind_fd = _probe_bind_fd(_probe_argv(path, False))
        return SandboxStatus(True, "bwrap", proc=False, bind_fd=bind_fd)
    log.warning("shell sandbox unavailable: %s; every shell command will ask", reason)
    return SandboxStatus(False, "none", reason)


def _probe_argv(path: str, proc: bool) -> list[str]:
    """A trivial command confined as real ones are."""
    probe = Confinement()
    return [
        path,
        *_mounts(probe, "/tmp/home", proc),
        *_isolation(probe),
        "--",
        _shell(),
        "-c",
        "true",
    ]


def _try(path: str, *, proc: bool) -> str:
    """Why a trivial command confined as real ones are fails ("" when it runs)."""
    argv = _probe_argv(path, proc)
    try:
        done = subprocess.run(argv, env={}, capture_output=True, timeout=PROBE_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{path} could not run: {exc}"
    if done.returncode == 0:
        return ""
    detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
    reason = f"{path} failed: {detail[-1] if detail else f'exit code {done.returncode}'}"
    return reason + " (user namespaces may be disabled here)"


def _probe_bind_fd(argv: list[str]) -> bool:
    """Whether this bwrap binds a descriptor (--ro-bind-fd, bwrap >= 0.8): tried, not
    read from a version string."""
    fd = os.open(os.path.dirname(_shell()), os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        tried = [argv[0], "--ro-bind-fd", str(fd), PROBE_MOUNT, *argv[1:]]
        done = subprocess.run(
            tried, env={}, capture_output=True, timeout=PROBE_TIMEOUT, pass_fds=(fd,), check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    finally:
        os.close(fd)
    if done.returncode != 0:
        log.info("%s has no --bind-fd: workspace roots are bound by path after a check", argv[0])
    return done.returncode == 0


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
    "SandboxedCommand",
    "existing",
    "is_locale_value",
    "sandbox_env",
]
