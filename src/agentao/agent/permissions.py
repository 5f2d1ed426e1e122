"""The permission engine: one per session, a `PermissionGate` for the turn loop.

Theory of operation
-------------------
`decide` turns (tool, args) into allow / ask / deny in four steps, most binding first:

1. `ask_user` and `todo_write` are always allowed (every mode).
2. The user's rules (`$AGENTAO_HOME/permissions.json`, never the project directory):
   a matching *deny* rule wins over everything; then *ask*; then *allow*.
3. The mode's preset (the posture), computed from the tool's kind and the paths it
   touches (resolved by `paths`) against the workspace (session cwd plus additional
   directories):

   | posture          | reads/searches          | edit/delete/move       | shell                      | fetch | other (MCP…) |
   |------------------|-------------------------|------------------------|----------------------------|-------|--------------|
   | read-only        | inside allow, out ask   | deny                   | sandbox, workspace read-only: allowlisted allow, else ask | deny | deny |
   | plan             | as read-only (+ todo_write)                                                                  |
   | workspace-write  | inside allow, out ask   | inside allow, out deny | sandbox: allowlisted allow (workspace read-only), else ask (workspace writable) | ask | ask |
   | full-access      | allow                   | allow                  | allow, unconfined          | allow | allow        |

   Shell commands run in the OS sandbox (agent/sandbox.py): no network, no home, only
   the workspace roots (and the user's `"sandbox"` paths) visible. The allowlist only
   decides that a command runs without asking; an allowlisted command runs with the
   workspace read-only, so "it only reads" is enforced, not trusted. Where no sandbox
   can run, every shell command asks under workspace-write and none runs under
   read-only or plan (nothing could hold it to reading).

   Under workspace-write, writing into `.git/` or into anything that looks like a git
   directory, or a file named `HEAD` (what makes a directory one), asks: git runs
   hooks and programs named in a repository's config. Writing through a hard-linked
   file is denied (see paths), and a shell `directory` outside the workspace is
   denied. MCP tools annotated read-only count as reads. Any other mode id behaves as
   workspace-write.
4. Remembered "always allow" grants turn a preset *ask* into allow. They are narrow:
   this tool with this command prefix (`npm test`), or this exact resolved path, or
   this URL origin for web_fetch; a tool with none of those (an MCP tool) is
   remembered by name. A grant never overrides a deny, and a command grant matches
   only simple commands (no `;`, `|`, `$(`…).

An allow rule may open what workspace-write denies (e.g. `{"action": "allow", "tool":
"write_file", "path": "/tmp/**"}`) but never widens read-only or plan. A rule with a
`command` may add `"network": true`: the commands it matches get the network in the
sandbox. The file's `"sandbox"` section adds paths every command may read or write,
network for all, and variables to pass through (`SandboxOptions`).
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from agentao.agent.paths import (
    PathAccess,
    PathError,
    is_hardlinked,
    is_inside,
    paths_of,
    pin,
    resolve,
)
from agentao.agent.roots import RootError
from agentao.agent.sandbox import Confinement, SandboxOptions, SandboxStatus, existing
from agentao.agent.settings import agentao_home
from agentao.agent.tools.base import Decision, Tool, ToolContext
from agentao.agent.tools.shell import (
    command_prefix,
    is_read_only_command,
    segments,
    simple_words,
    starts_with,
)

Action = Literal["allow", "ask", "deny"]
DEFAULT_MODE = "workspace-write"
# `task` only hands work to a child whose every call is gated here (agent/subagents.py)
ALWAYS_ALLOWED = frozenset({"ask_user", "todo_write", "task"})
PROTECTED_DIRS = frozenset({".git"})
GIT_DIR_MARKER = "HEAD"  # git takes a directory with HEAD plus objects/ or refs/ for a repository
NO_SANDBOX = SandboxStatus(False, "none", "no sandbox was set up")
_READ_KINDS = frozenset({"read", "search"})
_ALLOW = Decision("allow")


@dataclass(frozen=True, slots=True)
class PermissionMode:
    id: str
    name: str
    description: str


MODES = (
    PermissionMode(
        "read-only",
        "Read only",
        "Read and search; commands run only in a read-only sandbox; nothing is changed.",
    ),
    PermissionMode(
        "workspace-write",
        "Workspace write",
        "Edit files in the workspace; sandboxed commands; ask before others and web fetches.",
    ),
    PermissionMode("full-access", "Full access", "Everything is allowed without asking."),
    PermissionMode("plan", "Plan", "Read and plan (todo list); nothing is changed."),
)
_POSTURES = frozenset(m.id for m in MODES)


class PermissionRulesError(ValueError):
    """The user's rules file cannot be read; raised rather than silently ignoring denies."""


@dataclass(frozen=True, slots=True)
class Rule:
    """A user rule: every field given must match (tool name glob, kind, path glob, command)."""

    action: Action
    tool: str | None = None
    kind: str | None = None
    path: str | None = None
    command: str | None = None
    network: bool = False  # with `command`: matching commands get the network in the sandbox

    def matches(
        self,
        tool: Tool,
        paths: Sequence[Path],
        command: str | None,
        roots: Sequence[Path],
    ) -> bool:
        if self.tool is not None and not fnmatch.fnmatchcase(tool.name, self.tool):
            return False
        if self.kind is not None and tool.kind != self.kind:
            return False
        if self.path is not None:
            if not paths:
                return False
            hits = [_path_matches(self.path, p, roots) for p in paths]
            # Deny/ask if any path matches; allow only if all do.
            if not (all(hits) if self.action == "allow" else any(hits)):
                return False
        if self.command is not None:
            if command is None:
                return False
            if self.action == "allow":
                words = simple_words(command)
                return words is not None and starts_with(words, self.command)
            return any(starts_with(seg, self.command) for seg in segments(command))
        return True


def _path_matches(pattern: str, path: Path, roots: Sequence[Path]) -> bool:
    """`*` matches across `/`; a relative pattern is matched under each workspace root."""
    pattern = str(Path(pattern).expanduser()) if pattern.startswith("~") else pattern
    if pattern.startswith("/"):
        return fnmatch.fnmatchcase(str(path), pattern)
    rels = [str(path.relative_to(r)) for r in roots if path.is_relative_to(r)]
    return any(fnmatch.fnmatchcase(rel, pattern) for rel in rels)


def rules_file() -> Path:
    return agentao_home() / "permissions.json"


@dataclass(frozen=True, slots=True)
class UserPolicy:
    """Everything permissions.json says: rules, and what the sandbox adds for commands."""

    rules: tuple[Rule, ...] = ()
    sandbox: SandboxOptions = field(default_factory=SandboxOptions)


def load_policy(path: Path | None = None) -> UserPolicy:
    """`{"rules": [{"action": "deny", "command": "rm"}, …], "sandbox": {"read": [paths],
    "write": [paths], "network": false, "env": [names]}}`; empty if the file is absent."""
    path = path or rules_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return UserPolicy()
    except (OSError, ValueError) as e:
        raise PermissionRulesError(f"{path}: {e}") from e
    items = data.get("rules", []) if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise PermissionRulesError(f'{path}: expected {{"rules": [...]}}')
    rules = tuple(_rule(item, f"{path}: rule {i + 1}") for i, item in enumerate(items))
    extra = data.get("sandbox", {}) if isinstance(data, dict) else {}
    return UserPolicy(rules, _sandbox_options(extra, f"{path}: sandbox"))


def load_rules(path: Path | None = None) -> tuple[Rule, ...]:
    """The user's rules alone (see `load_policy`)."""
    return load_policy(path).rules


def _rule(item: object, where: str) -> Rule:
    fields = ("tool", "kind", "path", "command")
    if not isinstance(item, dict) or item.get("action") not in ("allow", "ask", "deny"):
        raise PermissionRulesError(f'{where}: needs "action": "allow" | "ask" | "deny"')
    unknown = set(item) - {"action", "network", *fields}
    if unknown:
        raise PermissionRulesError(f"{where}: unknown field(s) {sorted(unknown)}")
    if not any(item.get(f) for f in fields):
        raise PermissionRulesError(f"{where}: needs at least one of {', '.join(fields)}")
    if any(item.get(f) is not None and not isinstance(item[f], str) for f in fields):
        raise PermissionRulesError(f"{where}: fields must be strings")
    network = item.get("network", False)
    if not isinstance(network, bool) or (network and not item.get("command")):
        raise PermissionRulesError(f'{where}: "network" is true or false, on a "command" rule')
    return Rule(item["action"], *(item.get(f) for f in fields), network=network)


def _sandbox_options(data: object, where: str) -> SandboxOptions:
    if not isinstance(data, dict) or set(data) - {"read", "write", "network", "env"}:
        raise PermissionRulesError(f'{where}: expected {{"read", "write", "network", "env"}}')
    lists = {k: data.get(k, []) for k in ("read", "write", "env")}
    if not all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in lists.values()):
        raise PermissionRulesError(f'{where}: "read", "write" and "env" are lists of strings')
    if not isinstance(data.get("network", False), bool):
        raise PermissionRulesError(f'{where}: "network" is true or false')
    return SandboxOptions(
        read=existing(Path(p) for p in lists["read"]),
        write=existing(Path(p) for p in lists["write"]),
        network=data.get("network", False),
        env=tuple(lists["env"]),
    )


@dataclass(frozen=True, slots=True)
class Grant:
    """One remembered "always allow": a tool plus exactly one narrowing key (or none for MCP)."""

    tool: str
    command: str | None = None
    path: str | None = None
    origin: str | None = None


class PermissionEngine:
    """`PermissionGate` for one session. `mode` may change (session/set_mode)."""

    def __init__(
        self,
        mode: str = DEFAULT_MODE,
        rules: Sequence[Rule] = (),
        grants: Iterable[Grant] = (),
        sandbox: SandboxStatus = NO_SANDBOX,
        options: SandboxOptions | None = None,
    ):
        self.mode = mode
        self.rules = tuple(rules)
        self._grants: set[Grant] = set(grants)
        self.sandbox = sandbox  # whether shell commands can be confined here
        self.options = options or SandboxOptions()

    @property
    def posture(self) -> str:
        """The preset in force: the mode id, or workspace-write for any other id."""
        return self.mode if self.mode in _POSTURES else DEFAULT_MODE

    @property
    def grants(self) -> frozenset[Grant]:
        return frozenset(self._grants)

    def decide(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> Decision:
        if tool.name in ALWAYS_ALLOWED:
            return _ALLOW
        try:  # never resolved again: a root swapped since the session opened is refused
            pinned = ctx.pinned_roots()
            roots = pinned.verified()
        except RootError as e:
            return Decision("deny", str(e))
        try:
            targets = {a: resolve(a.path, ctx.cwd, a.op) for a in paths_of(tool, args, ctx.cwd)}
        except PathError as e:
            return Decision("deny", f"invalid path: {e}")
        command = _command(tool, args)
        decision = self._decide(tool, args, targets, command, roots)
        if decision.verdict != "deny":
            pin(ctx.state, ctx.call_id, targets)
        if decision.confinement is not None:  # the sandbox binds what was checked
            confinement = replace(decision.confinement, pinned=pinned.dirs)
            decision = replace(decision, confinement=confinement)
        return decision

    def _decide(
        self,
        tool: Tool,
        args: dict[str, Any],
        targets: dict[PathAccess, Path],
        command: str | None,
        roots: tuple[Path, ...],
    ) -> Decision:
        rule = self._rule(tool, list(targets.values()), command, roots)
        if rule is not None and rule.action == "deny":
            return Decision("deny", f"denied by your permission rule {_describe(rule)}")
        preset = self._preset(tool, targets, command, roots)
        hard = self.posture in ("read-only", "plan")
        if preset.verdict == "deny" and (hard or rule is None or rule.action != "allow"):
            return preset
        if rule is not None:
            confinement = preset.confinement
            if confinement is not None and rule.network:
                confinement = replace(confinement, network=True)
            return Decision(rule.action, f"your permission rule {_describe(rule)}", confinement)
        if preset.verdict == "ask" and self._granted(tool, args, targets, command):
            return replace(preset, verdict="allow")
        return preset

    def _rule(
        self, tool: Tool, paths: list[Path], command: str | None, roots: tuple[Path, ...]
    ) -> Rule | None:
        matched = [r for r in self.rules if r.matches(tool, paths, command, roots)]
        for action in ("deny", "ask", "allow"):
            for rule in matched:
                if rule.action == action:
                    return rule
        return None

    def _preset(
        self,
        tool: Tool,
        targets: dict[PathAccess, Path],
        command: str | None,
        roots: tuple[Path, ...],
    ) -> Decision:
        posture = self.posture
        if posture == "full-access":
            return _ALLOW
        kind = tool.kind
        reads_only = kind in _READ_KINDS and all(a.op == "read" for a in targets)
        if posture in ("read-only", "plan") and not reads_only and kind != "execute":
            return Decision(
                "deny", f"mode {self.mode} only reads and searches; {tool.name} is not allowed"
            )
        verdict = _ALLOW
        for access, path in targets.items():
            inside = is_inside(path, roots)
            if access.op == "read":
                if not inside:
                    verdict = Decision("ask", f"{path} is outside the workspace")
                continue
            if not inside:
                where = ", ".join(map(str, roots))
                return Decision(
                    "deny", f"{path} is outside the workspace ({where}) in mode {self.mode}"
                )
            if access.op == "write" and is_hardlinked(path):
                return Decision(
                    "deny",
                    f"{path} has several hard links, one may lie outside the workspace;"
                    " refusing to write through it",
                )
            if access.op != "cwd" and _in_git_dir(path, roots):
                verdict = Decision("ask", f"{path} is (or would make) git's own files")
        if kind in _READ_KINDS or kind == "think" or kind in ("edit", "delete", "move"):
            return verdict
        if kind == "execute":
            cwd = next((p for a, p in targets.items() if a.op == "cwd"), roots[0])
            only_reads = bool(command) and is_read_only_command(command or "", cwd, roots)
            return self._shell(verdict.verdict == "allow" and only_reads, roots)
        if kind == "fetch":
            return Decision("ask", "network fetches need your approval")
        return Decision("ask", f"{tool.name} needs your approval")

    def _shell(self, only_reads: bool, roots: tuple[Path, ...]) -> Decision:
        """Whether a command asks, and the sandbox it runs in (see the table above)."""
        read_only_mode = self.posture in ("read-only", "plan")
        if not self.sandbox.available:
            why = f"no sandbox can run here: {self.sandbox.reason}"
            if read_only_mode:
                return Decision("deny", f"mode {self.mode} runs commands only sandboxed; {why}")
            return Decision("ask", f"shell commands need your approval ({why})")
        writable = () if read_only_mode or only_reads else roots
        confinement = self._confinement(writable, roots)
        if only_reads:
            return Decision("allow", "", confinement)
        return Decision("ask", "shell commands need your approval", confinement)

    def _confinement(self, writable: tuple[Path, ...], roots: tuple[Path, ...]) -> Confinement:
        extra = self.options
        writable = (*writable, *(p for p in extra.write if p not in writable))
        readable = tuple(p for p in (*roots, *extra.read) if p not in writable)
        return Confinement(writable, readable, extra.network, extra.env)

    def remember(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> None:
        """ "Always allow" this tool with this command prefix / these paths / this origin."""
        self._grants.update(self._grant_keys(tool, args, ctx))

    def _grant_keys(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> set[Grant]:
        command = _command(tool, args)
        if command is not None:
            prefix = command_prefix(command)
            return {Grant(tool.name, command=prefix)} if prefix else set()
        try:
            targets = [resolve(a.path, ctx.cwd, a.op) for a in paths_of(tool, args, ctx.cwd)]
        except PathError:
            return set()
        if targets:
            return {Grant(tool.name, path=str(p)) for p in targets}
        if tool.kind == "fetch":
            origin = _origin(args.get("url"))
            return {Grant(tool.name, origin=origin)} if origin else set()
        return {Grant(tool.name)}

    def _granted(
        self,
        tool: Tool,
        args: dict[str, Any],
        targets: dict[PathAccess, Path],
        command: str | None,
    ) -> bool:
        mine = [g for g in self._grants if g.tool == tool.name]
        if command is not None:
            words = simple_words(command)
            return bool(words) and any(g.command and starts_with(words, g.command) for g in mine)
        if targets:
            paths = {g.path for g in mine if g.path}
            return all(str(p) in paths for p in targets.values())
        if tool.kind == "fetch":
            origin = _origin(args.get("url"))
            return origin is not None and any(g.origin == origin for g in mine)
        return Grant(tool.name) in mine

    def to_dict(self) -> dict[str, Any]:
        """The remembered grants, for the server to persist with the session."""
        grants = [{k: v for k, v in asdict(g).items() if v is not None} for g in self._grants]
        return {"version": 1, "grants": sorted(grants, key=lambda g: sorted(g.items()))}

    @classmethod
    def from_dict(
        cls,
        data: dict[str, Any],
        mode: str = DEFAULT_MODE,
        rules: Sequence[Rule] = (),
        sandbox: SandboxStatus = NO_SANDBOX,
        options: SandboxOptions | None = None,
    ) -> PermissionEngine:
        """An engine with the grants of `to_dict()`; unknown or malformed entries are dropped."""
        grants = []
        for item in data.get("grants", []) if isinstance(data, dict) else []:
            if isinstance(item, dict) and isinstance(item.get("tool"), str):
                keys = {k: item.get(k) for k in ("command", "path", "origin")}
                if all(v is None or isinstance(v, str) for v in keys.values()):
                    grants.append(Grant(item["tool"], **keys))
        return cls(mode, rules, grants, sandbox, options)


def _command(tool: Tool, args: dict[str, Any]) -> str | None:
    command = args.get("command")
    return command if tool.kind == "execute" and isinstance(command, str) else None


def _origin(url: object) -> str | None:
    if not isinstance(url, str):
        return None
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower() if parts.scheme and parts.netloc else None


def _relative_parts(path: Path, roots: Sequence[Path]) -> tuple[str, ...]:
    for root in roots:
        if path.is_relative_to(root):
            return path.relative_to(root).parts
    return ()


def _in_git_dir(path: Path, roots: Sequence[Path]) -> bool:
    """Whether changing `path` changes a git repository's own files: under `.git`, a
    file named HEAD (which turns a directory into a repository git will obey), or
    inside (or being) a directory that already looks like one (a bare repository
    under an ordinary name, as a hostile repository may carry)."""
    parts = _relative_parts(path, roots)
    if any(part in PROTECTED_DIRS for part in parts) or path.name == GIT_DIR_MARKER:
        return True
    root = next((r for r in roots if path.is_relative_to(r)), None)
    here = path
    while root is not None:
        if _looks_like_git_dir(here):
            return True
        if here == root:
            return False
        here = here.parent
    return False


def _looks_like_git_dir(path: Path) -> bool:
    try:
        if not (path / GIT_DIR_MARKER).is_file():
            return False
        return (path / "objects").is_dir() or (path / "refs").is_dir()
    except OSError:
        return False


def _describe(rule: Rule) -> str:
    fields = {k: v for k, v in asdict(rule).items() if v not in (None, False) and k != "action"}
    return f"{rule.action} {json.dumps(fields)}"


__all__ = [
    "ALWAYS_ALLOWED",
    "DEFAULT_MODE",
    "MODES",
    "Grant",
    "PermissionEngine",
    "PermissionMode",
    "PermissionRulesError",
    "Rule",
    "UserPolicy",
    "load_policy",
    "load_rules",
    "rules_file",
]
