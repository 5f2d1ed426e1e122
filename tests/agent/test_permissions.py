"""The permission engine: the mode by tool by inside/outside matrix as data, rules, grants."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from agentao.agent.mcp import McpTool
from agentao.agent.permissions import (
    MODES,
    Grant,
    PermissionEngine,
    PermissionRulesError,
    Rule,
    load_policy,
    load_rules,
)
from agentao.agent.sandbox import SandboxStatus
from agentao.agent.settings import McpLimits
from agentao.agent.tools.base import Tool, ToolContext, ToolResult
from agentao.agent.tools.files import (
    DeleteFile,
    ListDirectory,
    MoveFile,
    ReadFile,
    Replace,
    WriteFile,
)
from agentao.agent.tools.search import Glob, SearchFileContent
from agentao.agent.tools.shell import RunShellCommand
from agentao.agent.tools.web import WebFetch
from tests.agent.doubles import make_ctx


class Named(Tool):
    """Stands in for todo_write / ask_user (their own modules; decided by name)."""

    def __init__(self, name: str, kind: str = "other"):
        self.name, self.kind, self.description, self.parameters = name, kind, "", {}

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return ToolResult("ok")


def mcp_tool(name: str, read_only: bool) -> McpTool:
    import mcp_types

    annotations = mcp_types.ToolAnnotations(read_only_hint=True) if read_only else None
    spec = mcp_types.Tool(name=name, input_schema={"type": "object"}, annotations=annotations)
    return McpTool("fake", spec, call=None, limits=McpLimits())  # type: ignore[arg-type]


@pytest.fixture
def ws(ws: Path) -> Path:
    (ws / "a.txt").write_text("a")
    (ws.parent / "out").mkdir()
    (ws.parent / "out" / "secret.txt").write_text("secret")
    return ws


# (tool, args inside the workspace, args outside it); OUT is the sibling dir `out`.
OUT = "../out"
CASES: dict[str, tuple[Tool, dict[str, Any], dict[str, Any]]] = {
    "read_file": (ReadFile(), {"file_path": "a.txt"}, {"file_path": f"{OUT}/secret.txt"}),
    "list_directory": (ListDirectory(), {"path": "."}, {"path": OUT}),
    "glob": (Glob(), {"pattern": "*.txt"}, {"pattern": "*.txt", "path": OUT}),
    "search": (SearchFileContent(), {"pattern": "a"}, {"pattern": "a", "path": OUT}),
    "write_file": (
        WriteFile(),
        {"file_path": "n.txt", "content": ""},
        {"file_path": f"{OUT}/n.txt", "content": ""},
    ),
    "replace": (
        Replace(),
        {"file_path": "a.txt", "old_string": "a", "new_string": "b"},
        {"file_path": f"{OUT}/secret.txt", "old_string": "s", "new_string": "b"},
    ),
    "delete_file": (DeleteFile(), {"file_path": "a.txt"}, {"file_path": f"{OUT}/secret.txt"}),
    "move_file": (
        MoveFile(),
        {"source": "a.txt", "destination": "b.txt"},
        {"source": "a.txt", "destination": f"{OUT}/b.txt"},
    ),
    "shell_readonly": (
        RunShellCommand(),
        {"command": "ls -la"},
        {"command": "ls -la", "directory": OUT},
    ),
    "shell_other": (
        RunShellCommand(),
        {"command": "make build"},
        {"command": "make", "directory": OUT},
    ),
    "web_fetch": (WebFetch(), {"url": "https://example.com/"}, {"url": "https://example.com/"}),
    "mcp_other": (mcp_tool("add", False), {"a": 1}, {"a": 1}),
    "mcp_read": (mcp_tool("echo", True), {"text": "x"}, {"text": "x"}),
    "todo_write": (Named("todo_write", "think"), {"todos": []}, {"todos": []}),
    "ask_user": (Named("ask_user"), {"question": "?"}, {"question": "?"}),
}

# Expected verdicts, "inside/outside" per tool, per posture.
READ_ONLY = {
    "read_file": "allow/ask", "list_directory": "allow/ask", "glob": "allow/ask",
    "search": "allow/ask", "write_file": "deny/deny", "replace": "deny/deny",
    "delete_file": "deny/deny", "move_file": "deny/deny", "shell_readonly": "allow/deny",
    "shell_other": "ask/deny", "web_fetch": "deny/deny", "mcp_other": "deny/deny",
    "mcp_read": "allow/allow", "todo_write": "allow/allow", "ask_user": "allow/allow",
}  # fmt: skip
WORKSPACE_WRITE = {
    "read_file": "allow/ask", "list_directory": "allow/ask", "glob": "allow/ask",
    "search": "allow/ask", "write_file": "allow/deny", "replace": "allow/deny",
    "delete_file": "allow/deny", "move_file": "allow/deny", "shell_readonly": "allow/deny",
    "shell_other": "ask/deny", "web_fetch": "ask/ask", "mcp_other": "ask/ask",
    "mcp_read": "allow/allow", "todo_write": "allow/allow", "ask_user": "allow/allow",
}  # fmt: skip
FULL_ACCESS = dict.fromkeys(CASES, "allow/allow")
MATRIX = {
    "read-only": READ_ONLY,
    "plan": READ_ONLY,
    "workspace-write": WORKSPACE_WRITE,
    "code": WORKSPACE_WRITE,  # any other mode id behaves as workspace-write
    "full-access": FULL_ACCESS,
}
CELLS = [
    (mode, case, where, expected.split("/")[i])
    for mode, table in MATRIX.items()
    for case, expected in table.items()
    for i, where in enumerate(("inside", "outside"))
]


# Where no sandbox can run, only the shell rows change: nothing runs without asking
# under workspace-write, and nothing runs at all in the read-only postures.
UNSANDBOXED = {
    "read-only": {"shell_readonly": "deny/deny", "shell_other": "deny/deny"},
    "workspace-write": {"shell_readonly": "ask/deny", "shell_other": "ask/deny"},
    "full-access": {"shell_readonly": "allow/allow", "shell_other": "allow/allow"},
}
SANDBOXED = SandboxStatus(True, "bwrap")
NOT_SANDBOXED = SandboxStatus(False, "none", "bwrap not found")


def test_matrix_covers_every_tool_and_mode() -> None:
    assert {m.id for m in MODES} <= set(MATRIX)
    assert all(set(table) == set(CASES) for table in MATRIX.values())
    assert len(CELLS) == 150


@pytest.mark.parametrize(("mode", "case", "where", "expected"), CELLS)
def test_permission_matrix(ws: Path, mode: str, case: str, where: str, expected: str) -> None:
    tool, inside, outside = CASES[case]
    decision = PermissionEngine(mode, sandbox=SANDBOXED).decide(
        tool, inside if where == "inside" else outside, make_ctx(ws)
    )
    assert decision.verdict == expected, decision.reason
    if expected != "allow":
        assert decision.reason  # the model is told why


@pytest.mark.parametrize(
    ("mode", "case", "where", "expected"),
    [
        (mode, case, where, expected.split("/")[i])
        for mode, table in UNSANDBOXED.items()
        for case, expected in table.items()
        for i, where in enumerate(("inside", "outside"))
    ],
)
def test_shell_without_a_sandbox(ws: Path, mode: str, case: str, where: str, expected: str) -> None:
    tool, inside, outside = CASES[case]
    decision = PermissionEngine(mode, sandbox=NOT_SANDBOXED).decide(
        tool, inside if where == "inside" else outside, make_ctx(ws)
    )
    assert decision.verdict == expected, decision.reason
    assert decision.confinement is None  # nothing to confine with: unconfined once approved
    if where == "inside" and expected != "allow":
        assert "no sandbox can run here: bwrap not found" in decision.reason


@pytest.mark.parametrize(
    ("mode", "command", "writable", "verdict"),
    [
        ("workspace-write", "ls -la", False, "allow"),  # allowlisted: runs, but cannot write
        ("workspace-write", "make build", True, "ask"),
        ("code", "make build", True, "ask"),
        ("read-only", "ls -la", False, "allow"),
        ("read-only", "make build", False, "ask"),
        ("plan", "make build", False, "ask"),
    ],
)
def test_shell_confinement(ws: Path, mode: str, command: str, writable: bool, verdict: str) -> None:
    decision = PermissionEngine(mode, sandbox=SANDBOXED).decide(
        RunShellCommand(), {"command": command}, make_ctx(ws)
    )
    assert decision.verdict == verdict
    c = decision.confinement
    assert c is not None and not c.network
    assert (c.writable, c.read_only) == (((ws,), ()) if writable else ((), (ws,)))


def test_full_access_runs_unconfined(ws: Path) -> None:
    decision = PermissionEngine("full-access", sandbox=SANDBOXED).decide(
        RunShellCommand(), {"command": "make"}, make_ctx(ws)
    )
    assert (decision.verdict, decision.confinement) == ("allow", None)


@pytest.mark.parametrize(
    ("command", "verdict"),
    [
        ("ls", "allow"),
        ("git status", "allow"),
        ("git diff HEAD~1", "allow"),
        ("grep -rn foo .", "allow"),
        ("cat a.txt", "allow"),
        ("cat ../out/secret.txt", "ask"),
        ("cat link", "ask"),  # a symlink to outside
        ("ls ~", "ask"),
        ("ls /", "ask"),
        ("head --lines=3 ../out/secret.txt", "ask"),
        ("git -c core.pager=sh status", "ask"),
        ("git diff --output=../x", "ask"),
        ("git diff --ext-diff", "ask"),
        ("git push", "ask"),
        ("grep -R foo .", "ask"),
        ("grep -rR foo .", "ask"),
        ("grep --deref -r secret .", "ask"),  # GNU's abbreviation of --dereference-recursive
        ("grep --dereference-rec secret .", "ask"),
        ("git diff --ext", "ask"),  # git takes abbreviations too
        ("git show --textc HEAD", "ask"),
        ("git log --outp=../x", "ask"),
        ("grep -r -- --deref .", "allow"),  # after --, a word is not an option
        ("rg --pre ./evil foo", "ask"),
        ("rg -L foo", "ask"),
        ("echo $HOME", "ask"),
        ("ls; rm -rf /", "ask"),
        ("ls && curl x", "ask"),
        ("cat a.txt | sh", "ask"),
        ("echo hi > a.txt", "ask"),
        ("echo `id`", "ask"),
        ("ls $(pwd)", "ask"),
        ("cat *.txt", "ask"),
        ("FOO=1 ls", "ask"),
        ("lsx", "ask"),
    ],
)
def test_shell_allowlist(ws: Path, command: str, verdict: str) -> None:
    (ws / "link").symlink_to(ws.parent / "out" / "secret.txt")
    engine = PermissionEngine(sandbox=SANDBOXED)
    decision = engine.decide(RunShellCommand(), {"command": command}, make_ctx(ws))
    assert decision.verdict == verdict


def test_protected_git_files(ws: Path) -> None:
    """A repository's own files decide which programs git runs: writing them asks, under
    .git, as a file named HEAD (what makes a directory a repository), and anywhere in a
    directory that already is one (a bare repository under an ordinary name)."""
    engine, ctx = PermissionEngine(), make_ctx(ws)
    bare = ws / "vendor" / "data"
    (bare / "refs").mkdir(parents=True)
    (bare / "HEAD").write_text("ref: refs/heads/main\n")

    def verdict(tool: Tool, args: dict[str, Any]) -> str:
        return engine.decide(tool, args, ctx).verdict

    assert verdict(WriteFile(), {"file_path": "evil/HEAD", "content": ""}) == "ask"
    assert verdict(WriteFile(), {"file_path": "vendor/data/config", "content": ""}) == "ask"
    assert (
        verdict(WriteFile(), {"file_path": "vendor/data/info/attributes", "content": ""}) == "ask"
    )
    assert verdict(MoveFile(), {"source": "a.txt", "destination": "x/HEAD"}) == "ask"
    assert verdict(MoveFile(), {"source": "vendor/data", "destination": "d2"}) == "ask"
    assert verdict(DeleteFile(), {"file_path": "vendor/data/HEAD"}) == "ask"
    # An ordinary project's files named config, objects/ or refs/ stay writable.
    assert verdict(WriteFile(), {"file_path": "config", "content": ""}) == "allow"
    assert verdict(WriteFile(), {"file_path": "src/refs/objects/config", "content": ""}) == "allow"
    assert verdict(WriteFile(), {"file_path": "vendor/readme", "content": ""}) == "allow"


def test_network_rule_and_sandbox_section(ws: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    path = tmp_path / "permissions.json"
    path.write_text(
        json.dumps(
            {
                "rules": [{"action": "allow", "command": "npm install", "network": True}],
                "sandbox": {"write": [str(cache)], "read": ["/nonexistent"], "env": ["CI"]},
            }
        )
    )
    policy = load_policy(path)
    engine = PermissionEngine(rules=policy.rules, sandbox=SANDBOXED, options=policy.sandbox)
    shell, ctx = RunShellCommand(), make_ctx(ws)
    npm = engine.decide(shell, {"command": "npm install"}, ctx)
    assert npm.verdict == "allow" and npm.confinement is not None
    assert npm.confinement.network
    assert npm.confinement.writable == (ws, Path(os.path.realpath(cache)))
    assert npm.confinement.env_names == ("CI",)
    other = engine.decide(shell, {"command": "make"}, ctx)
    assert other.verdict == "ask" and other.confinement is not None
    assert not other.confinement.network  # the network is for the rule's commands only
    assert other.confinement.read_only == ()  # a missing path is left out


@pytest.mark.parametrize(
    "content",
    [
        {"rules": [{"action": "allow", "tool": "x", "network": True}]},  # network needs command
        {"rules": [{"action": "allow", "command": "x", "network": "yes"}]},
        {"sandbox": {"write": "/tmp"}},
        {"sandbox": {"network": 1}},
        {"sandbox": {"mounts": []}},
    ],
)
def test_bad_sandbox_settings_are_errors(tmp_path: Path, content: dict[str, Any]) -> None:
    path = tmp_path / "permissions.json"
    path.write_text(json.dumps(content))
    with pytest.raises(PermissionRulesError, match=str(path)):
        load_policy(path)


def test_protected_dir_and_hard_links(ws: Path) -> None:
    engine, ctx = PermissionEngine(), make_ctx(ws)
    assert (
        engine.decide(WriteFile(), {"file_path": ".git/config", "content": ""}, ctx).verdict
        == "ask"
    )
    os.link(ws / "a.txt", ws / "b.txt")
    decision = engine.decide(WriteFile(), {"file_path": "b.txt", "content": ""}, ctx)
    assert decision.verdict == "deny" and "hard links" in decision.reason
    assert engine.decide(DeleteFile(), {"file_path": "b.txt"}, ctx).verdict == "allow"
    assert (
        PermissionEngine("full-access")
        .decide(WriteFile(), {"file_path": "b.txt", "content": ""}, ctx)
        .verdict
        == "allow"
    )


def test_invalid_paths_are_denied(ws: Path) -> None:
    decision = PermissionEngine().decide(ReadFile(), {"file_path": "a\0b"}, make_ctx(ws))
    assert decision.verdict == "deny" and "NUL" in decision.reason


def test_mode_can_change(ws: Path) -> None:
    engine = PermissionEngine()
    args = {"file_path": "n.txt", "content": ""}
    assert engine.decide(WriteFile(), args, make_ctx(ws)).verdict == "allow"
    engine.mode = "plan"
    assert engine.decide(WriteFile(), args, make_ctx(ws)).verdict == "deny"


def test_additional_directories_are_workspace(ws: Path) -> None:
    ctx = make_ctx(ws)
    ctx.workspace = (ws, ws.parent / "out")
    decision = PermissionEngine().decide(
        WriteFile(), {"file_path": f"{OUT}/n.txt", "content": ""}, ctx
    )
    assert decision.verdict == "allow"


# --- user rules ---------------------------------------------------------------


def decide(engine: PermissionEngine, ws: Path, case: str, where: str = "inside") -> str:
    tool, inside, outside = CASES[case]
    return engine.decide(tool, inside if where == "inside" else outside, make_ctx(ws)).verdict


def test_deny_rules_beat_allow_rules(ws: Path) -> None:
    engine = PermissionEngine(
        "full-access", [Rule("allow", tool="read_file"), Rule("deny", path="a.txt")]
    )
    assert decide(engine, ws, "read_file") == "deny"
    assert (
        "permission rule" in engine.decide(ReadFile(), {"file_path": "a.txt"}, make_ctx(ws)).reason
    )


def test_command_rules(ws: Path) -> None:
    engine = PermissionEngine(
        "workspace-write", [Rule("deny", command="rm"), Rule("allow", command="make")]
    )
    ctx, shell = make_ctx(ws), RunShellCommand()
    assert engine.decide(shell, {"command": "rm -rf x"}, ctx).verdict == "deny"
    assert engine.decide(shell, {"command": "ls && rm -rf x"}, ctx).verdict == "deny"
    assert engine.decide(shell, {"command": "echo $(rm x)"}, ctx).verdict == "deny"
    assert engine.decide(shell, {"command": "make build"}, ctx).verdict == "allow"
    assert engine.decide(shell, {"command": "make; curl x"}, ctx).verdict == "ask"
    assert engine.decide(shell, {"command": "makefoo"}, ctx).verdict == "ask"


def test_ask_and_kind_and_tool_glob_rules(ws: Path) -> None:
    engine = PermissionEngine(
        "full-access", [Rule("ask", kind="edit"), Rule("deny", tool="mcp__fake__*")]
    )
    assert decide(engine, ws, "write_file") == "ask"
    assert decide(engine, ws, "read_file") == "allow"
    assert decide(engine, ws, "mcp_read") == "deny"


def test_allow_rule_opens_workspace_write_but_never_read_only(ws: Path) -> None:
    rule = Rule("allow", tool="write_file", path=str(ws.parent / "out" / "*"))
    assert (
        decide(PermissionEngine("workspace-write", [rule]), ws, "write_file", "outside") == "allow"
    )
    assert decide(PermissionEngine("read-only", [rule]), ws, "write_file", "outside") == "deny"


def test_load_rules_from_agentao_home(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("AGENTAO_HOME", str(home))
    # A rules file in the project directory is never read.
    (ws / "permissions.json").write_text(json.dumps({"rules": [{"action": "allow", "tool": "*"}]}))
    assert load_rules() == ()
    (home / "permissions.json").write_text(
        json.dumps(
            {"rules": [{"action": "deny", "command": "rm"}, {"action": "ask", "path": "**/.env"}]}
        )
    )
    assert load_rules() == (Rule("deny", command="rm"), Rule("ask", path="**/.env"))


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        '{"rules": {}}',
        '{"rules": [{"action": "maybe", "tool": "x"}]}',
        '{"rules": [{"action": "deny"}]}',
        '{"rules": [{"action": "deny", "tool": 3}]}',
        '{"rules": [{"action": "deny", "tool": "x", "colour": "red"}]}',
    ],
)
def test_bad_rules_file_is_an_error(tmp_path: Path, content: str) -> None:
    path = tmp_path / "permissions.json"
    path.write_text(content)
    with pytest.raises(PermissionRulesError, match=str(path)):
        load_rules(path)


# --- remembered grants --------------------------------------------------------


def test_command_grant_is_narrow(ws: Path) -> None:
    engine, ctx, shell = PermissionEngine(sandbox=SANDBOXED), make_ctx(ws), RunShellCommand()
    engine.remember(shell, {"command": "npm test -- --watch"}, ctx)
    assert engine.grants == {Grant("run_shell_command", command="npm test")}
    assert engine.decide(shell, {"command": "npm test"}, ctx).verdict == "allow"
    assert engine.decide(shell, {"command": "npm install evil"}, ctx).verdict == "ask"
    assert engine.decide(shell, {"command": "npm test; rm -rf /"}, ctx).verdict == "ask"
    out = {"command": "npm test", "directory": OUT}
    assert engine.decide(shell, out, ctx).verdict == "deny"  # a grant never beats a deny


def test_path_grant_is_this_exact_path(ws: Path) -> None:
    (ws.parent / "out" / "other.txt").write_text("")
    engine, ctx = PermissionEngine(), make_ctx(ws)
    engine.remember(ReadFile(), {"file_path": f"{OUT}/secret.txt"}, ctx)
    assert engine.decide(ReadFile(), {"file_path": f"{OUT}/secret.txt"}, ctx).verdict == "allow"
    assert engine.decide(ReadFile(), {"file_path": f"{OUT}/other.txt"}, ctx).verdict == "ask"
    assert engine.decide(ListDirectory(), {"path": OUT}, ctx).verdict == "ask"


def test_fetch_and_mcp_grants(ws: Path) -> None:
    engine, ctx = PermissionEngine(), make_ctx(ws)
    engine.remember(WebFetch(), {"url": "https://example.com/a"}, ctx)
    assert engine.decide(WebFetch(), {"url": "https://example.com/b"}, ctx).verdict == "allow"
    assert engine.decide(WebFetch(), {"url": "https://evil.example/"}, ctx).verdict == "ask"
    add = mcp_tool("add", False)
    engine.remember(add, {"a": 1}, ctx)
    assert engine.decide(add, {"a": 2}, ctx).verdict == "allow"
    assert engine.decide(mcp_tool("sub", False), {}, ctx).verdict == "ask"


def test_grants_round_trip(ws: Path) -> None:
    engine, ctx = PermissionEngine(), make_ctx(ws)
    engine.remember(RunShellCommand(), {"command": "make"}, ctx)
    engine.remember(ReadFile(), {"file_path": f"{OUT}/secret.txt"}, ctx)
    engine.remember(WebFetch(), {"url": "https://example.com/"}, ctx)
    data = json.loads(json.dumps(engine.to_dict()))
    again = PermissionEngine.from_dict(data)
    assert again.grants == engine.grants and len(again.grants) == 3
    bad = {"grants": [{"tool": 3}, "x", {"tool": "t", "path": 5}, {"tool": "ok"}]}
    assert PermissionEngine.from_dict(bad).grants == {Grant("ok")}
