"""The `agentao` command: one entry point, each face imported only when chosen.

Imports stay inside the branches so that `agentao --acp` answers `initialize`
without paying for the gateway's or the client's dependencies.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from agentao import __version__

if TYPE_CHECKING:
    import argparse


def _parser() -> argparse.ArgumentParser:
    import argparse  # not for `agentao --acp` (see _acp_only)

    parser = argparse.ArgumentParser(
        prog="agentao",
        description="Agent Client Protocol: with no command, an interactive session with an "
        "agent in this directory (agentao's needs an LLM provider: see `agentao doctor`; "
        "`agentao demo` needs none). Also an agent (--acp), a client (run, demo, connect, "
        "sessions) and an OpenAI-compatible gateway (serve).",
    )
    parser.add_argument("--version", action="version", version=f"agentao {__version__}")
    parser.add_argument("--acp", action="store_true", help="serve ACP on stdio (for editors)")
    parser.add_argument(
        "--resume",
        nargs="?",
        const="",
        default=None,
        metavar="SESSION_ID",
        help="reopen a session of this directory with its history (without ID: pick one); "
        "with --acp: the first session/new resumes the latest (or the named) session",
    )
    parser.add_argument(
        "-c",
        "--continue",
        dest="continue_last",
        action="store_true",
        help="reopen the last session of this directory",
    )
    parser.add_argument(
        "--agent",
        dest="chat_agent",
        metavar="CMD|URL",
        help="the interactive session's (and `sessions`') agent: a command, e.g. "
        '"qwen --acp", or a remote agent\'s URL; default: agentao',
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_serve(commands)
    _add_run(commands)
    commands.add_parser(
        "demo",
        help="a complete offline session with agentao's scripted agent (no API key)",
        description="Drive agentao's own agent through a scripted session over real pipes: "
        "streaming text, a thought, a plan, file edits with diffs, a permission request, "
        "and a resumed session. No LLM and no API key involved.",
    )
    connect = commands.add_parser(
        "connect",
        help="a remote ACP agent (URL) on stdio, for an editor to spawn",
        description="Speak ACP on stdin/stdout, as an agent an editor spawns, and pass every "
        "message to the ACP agent at URL (agentao serve's /acp, or any server of ACP's "
        "remote transport) and back. The bearer key comes from AGENTAO_REMOTE_KEY.",
    )
    connect.add_argument("url", help="http(s)://host/acp or ws(s)://host/acp")
    commands.add_parser(
        "sessions",
        help="the sessions of this directory (agentao's, or --agent's), the latest first",
        description="List the sessions the agent keeps for the current directory: when each "
        "was last updated, its id (for `agentao --resume ID`) and its title.",
    )
    doctor = commands.add_parser(
        "doctor",
        help="check this machine: LLM provider and endpoint, shell sandbox, rules, state",
        description="Report what the agent will find here: the install, whether the LLM "
        "provider's variables are set and its endpoint answers (one request to its model "
        "list; the key is never printed), whether shell commands can be sandboxed (and why "
        "not), whether the permission rules file is valid, where the state is kept, whether "
        "Chromium is there for the web UI's tests. Exit code 1 if something needed is "
        "missing. Nothing is changed.",
    )
    doctor.add_argument("--json", action="store_true", help="the checks as one JSON object")
    doctor.add_argument(
        "--offline", action="store_true", help="skip the request to the LLM endpoint"
    )
    return parser


# agentao's own modes (tests/test_cli.py holds this to agent/permissions.py's MODES;
# not imported here: `agentao run --help` should not load the agent runtime).
AGENTAO_MODES = (
    ("read-only", "read and search; commands only in a read-only sandbox"),
    ("workspace-write", "the default: edit the workspace; sandboxed commands, others ask"),
    ("full-access", "everything, unconfined"),
    ("plan", "read and plan; nothing is changed"),
)
RUN_EPILOG = """\
modes (--mode; agentao's, other agents offer their own; an unknown one exits 2):
{modes}

approvals (--approve; of permission requests and of every command the agent runs in
this client's terminal; whatever is not approved is rejected, with the reason told
to the agent):
  (none)    reject every permission request (the default)
  reads     approve read, search and think tools, reject the rest
  all       approve everything once (never "always")
  ask       ask at this terminal (rejects when there is no terminal)

environment (read by agentao's agent; other agents have their own):
  LLM_PROVIDER           OPENAI (default), ANTHROPIC, SCRIPTED, or any prefix
  {{PROVIDER}}_API_KEY     e.g. OPENAI_API_KEY, DEEPSEEK_API_KEY (required)
  {{PROVIDER}}_BASE_URL    any OpenAI-compatible endpoint
  {{PROVIDER}}_MODEL       e.g. gpt-4o
  AGENTAO_SCRIPT         with LLM_PROVIDER=SCRIPTED: the scripted replies (JSON)
  AGENTAO_HOME           state: sessions, logs, permissions.json
  AGENTAO_SANDBOX        auto (default) or off
  AGENTAO_LOG_LEVEL      INFO (default), DEBUG, WARNING
  AGENTAO_REMOTE_KEY     with --agent URL: the bearer key sent to that server
                         (default for a loopback URL: the keyless gateway's local token)
  AGENTAO_STORE_URL      serve: the gateway's store (postgresql://...) when --store is not given

local commands (the prompt alone; answered here, never sent to the model):
  /help            the agent's commands and these
  /model [NAME]    the agent's models, or switch to NAME

exit codes: 0 done (also when you rejected a request at --approve ask), 1 error,
2 usage, 3 the --approve policy rejected a permission request, 130 interrupted
(the first Ctrl-C, also at a permission question, sends session/cancel; a second
one stops at once)
"""


def _add_run(commands: argparse._SubParsersAction) -> None:
    import argparse

    modes = "\n".join(f"  {mode:<16}  {what}" for mode, what in AGENTAO_MODES)
    run = commands.add_parser(
        "run",
        help="send one prompt to any ACP agent and stream its answer",
        description="Start an ACP agent (default: agentao), open a session in --cwd, send PROMPT "
        "(or stdin) and stream the turn: markdown and a spinner on a terminal, plain text "
        "when piped, JSON lines with --json.",
        epilog=RUN_EPILOG.format(modes=modes),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("prompt", nargs="?", help="the prompt (default: read from stdin)")
    run.add_argument(
        "--agent",
        metavar="CMD|URL",
        help='agent command, e.g. "qwen --acp", or a remote agent\'s URL, e.g. '
        "https://host/acp or wss://host/acp (key from AGENTAO_REMOTE_KEY); default: agentao",
    )
    run.add_argument("--cwd", metavar="DIR", help="the session's working directory (default: .)")
    run.add_argument("--mode", metavar="M", help="session mode to set first (session/set_mode)")
    run.add_argument("--model", metavar="M", help="model to switch to first")
    run.add_argument(
        "--approve",
        choices=["reads", "all", "ask"],
        help="answer permission requests: reads (read/search/think), all, or ask in the "
        "terminal (default: reject)",
    )
    run.add_argument(
        "--pass-env",
        action="append",
        default=[],
        metavar="NAME",
        help="let the agent's terminal commands see this variable although it looks like a "
        "credential (repeatable; keys, tokens and passwords are withheld by default)",
    )
    run.add_argument(
        "--resume",
        metavar="SESSION_ID",
        help="send the prompt in this session, its history shown first (session/load, or "
        "ACP v2's session/resume with a replay)",
    )
    run.add_argument(
        "-c",
        "--continue",
        dest="continue_latest",
        action="store_true",
        help="as --resume, in the session last updated in --cwd",
    )
    run.add_argument("--json", action="store_true", help="one JSON event per line on stdout")
    run.add_argument("--record", metavar="FILE", help="write every message both ways as JSONL")
    run.add_argument(
        "--protocol",
        type=int,
        choices=(1, 2),
        help="speak only this ACP version (default: offer 2, fall back to 1)",
    )


def _add_serve(commands: argparse._SubParsersAction) -> None:
    serve = commands.add_parser(
        "serve",
        help="OpenAI-compatible HTTP API, task stream and web UI in front of ACP agents",
        description="Serve ACP agents behind /v1/chat/completions, /v1/responses, a task-stream "
        "WebSocket and a web UI at /. With no --agent (and none in the config), serves agentao.",
    )
    serve.add_argument("--config", metavar="FILE", help="TOML config: agents, API keys, limits")
    serve.add_argument(
        "--agent",
        action="append",
        metavar="NAME=CMD",
        help='an agent to serve as model NAME, e.g. --agent "qwen=qwen --acp" (repeatable)',
    )
    serve.add_argument("--host", help="interface to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default 8765)")
    serve.add_argument(
        "--allowed-host",
        action="append",
        metavar="NAME[:PORT]",
        help="a Host name to serve besides 127.0.0.1, localhost and [::1] on the bound port "
        "(repeatable); every other Host gets 421",
    )
    serve.add_argument(
        "--allowed-origin",
        action="append",
        metavar="SCHEME://HOST[:PORT]",
        help="a browser origin besides the gateway's own that may POST and open WebSockets; "
        "it also gets CORS answers (repeatable)",
    )
    serve.add_argument(
        "--store",
        metavar="PATH|URL",
        help="where conversations and responses are kept: a SQLite file, or a PostgreSQL "
        "database (postgresql://user:password@host:port/db) that several gateways may share; "
        "default: $AGENTAO_STORE_URL, else the config's [server] store, else the state directory",
    )
    serve.add_argument(
        "--advertise-url",
        metavar="URL",
        help="with replicas on one PostgreSQL store: where the others send requests for the "
        "conversations this one holds (default: http://HOST:PORT as bound)",
    )
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning"])


def _acp_only(argv: list[str]) -> tuple[bool, str | None]:
    """(True, resume) for `--acp`, `--acp --resume` and `--acp --resume ID`, else (False, _).

    Why not argparse here: it (and the shutil and locale it pulls in) costs about a tenth
    of the time an editor waits for `initialize`, for the one command editors run."""
    if argv[:1] != ["--acp"] or len(argv) > 3:
        return False, None
    rest = argv[1:]
    if not rest:
        return True, None
    if rest[0] != "--resume" or (len(rest) == 2 and rest[1].startswith("-")):
        return False, None
    return True, rest[1] if len(rest) == 2 else ""


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = _parser()
    _did_you_mean(parser, argv)
    return parser.parse_args(argv)


def _did_you_mean(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """Stop at the first unknown `--flag` (or a command close to a known one) with exit 2
    and "did you mean", from the parser it belongs to. argparse has `suggest_on_error` only
    from 3.14, and on its own `run --aprove all hi` took "all" as the prompt and blamed
    "hi" in the top-level usage. Prefixes of a flag stay accepted, as argparse takes them."""
    import difflib

    commands = _commands(parser)
    current = parser
    for token in argv:
        if token == "--":
            return
        if token.startswith("--"):
            name = token.split("=", 1)[0]
            known = [o for o in current._option_string_actions if o.startswith("--")]
            if any(flag.startswith(name) for flag in known):
                continue
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            current.error(f"unrecognized argument {name}{hint}")
        elif current is parser and not token.startswith("-"):
            if token in commands:
                current = commands[token]
                continue
            close = difflib.get_close_matches(token, list(commands), n=1)
            if close:
                parser.error(f"unknown command {token!r}; did you mean {close[0]!r}?")
            return  # a value (of --resume): argparse says what it makes of it


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    import argparse

    for action in parser._actions:  # argparse keeps its subcommands only here
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def main(argv: list[str] | None = None) -> int:
    """Run the command; an error no face caught is printed redacted (a URL in it may
    carry a password), and the exit code is 1."""
    try:
        return _main(argv)
    except Exception:
        import traceback

        from agentao.credentials import redact_secrets  # imports logging: not before here

        sys.stderr.write(redact_secrets(traceback.format_exc()))
        return 1


def _main(argv: list[str] | None) -> int:
    acp, resume = _acp_only(sys.argv[1:] if argv is None else argv)
    if acp:
        from agentao.server.main import serve_stdio

        return serve_stdio(resume=resume)
    args = _parse(sys.argv[1:] if argv is None else list(argv))
    if args.acp:
        from agentao.server.main import serve_stdio

        return serve_stdio(resume=args.resume)
    if args.command == "run":
        from agentao.cli.run import main as run_main

        return run_main(args)
    if args.command == "demo":
        from agentao.cli.demo import main as demo_main

        return demo_main()
    if args.command == "connect":
        from agentao.cli.connect import main as connect_main

        return connect_main(args.url)
    if args.command == "doctor":
        from agentao.cli.doctor import main as doctor_main

        return doctor_main(json_output=args.json, offline=args.offline)
    if args.command == "serve":
        from agentao.gateway.main import run_serve

        return run_serve(args)
    if args.command == "sessions":
        from agentao.cli.chat import sessions_main

        return sessions_main(args)
    from agentao.cli.chat import main as chat_main

    return chat_main(args)
