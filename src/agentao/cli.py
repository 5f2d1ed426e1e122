"""The `agentao` command: one entry point, each face imported only when chosen.

Imports stay inside the branches so that `agentao --acp` answers `initialize`
without paying for the gateway's or the client's dependencies.
"""

from __future__ import annotations

import argparse
import sys

from agentao import __version__


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentao",
        description="Agent Client Protocol: an agent (--acp), a client (run, demo) "
        "and an OpenAI-compatible gateway (serve).",
    )
    parser.add_argument("--version", action="version", version=f"agentao {__version__}")
    parser.add_argument("--acp", action="store_true", help="serve ACP on stdio (for editors)")
    parser.add_argument(
        "--resume",
        nargs="?",
        const="",
        default=None,
        metavar="SESSION_ID",
        help="with --acp: the first session/new resumes the latest (or the named) session",
    )
    parser.add_subparsers(dest="command", metavar="COMMAND")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.acp:
        from agentao.server.main import serve_stdio

        return serve_stdio(resume=args.resume)
    _parser().print_help(sys.stderr)
    return 2
