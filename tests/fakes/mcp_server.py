"""A real stdio MCP server, written with the official `mcp` SDK, for agentao's tests.

Run: `python tests/fakes/mcp_server.py [--name NAME] [--pid-file PATH] [--fail]`.
Tools: `echo` (read-only), `add`, `whoami` (its pid and selected environment),
`boom` (a tool error). `--fail` exits before speaking MCP (a broken server).
"""

from __future__ import annotations

import argparse
import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations


def build(name: str) -> MCPServer:
    server = MCPServer(name)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, title="Echo text"))
    def echo(text: str) -> str:
        """Return `text` unchanged."""
        return text

    @server.tool()
    def add(a: int, b: int) -> str:
        """Add two integers."""
        return str(a + b)

    @server.tool()
    def whoami(var: str = "") -> str:
        """The server's pid, and the value of environment variable `var`."""
        return f"pid={os.getpid()} {var}={os.environ.get(var, '<unset>')}"

    @server.tool()
    def boom() -> str:
        """Always fails."""
        raise ToolError("boom on purpose")

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="fake")
    parser.add_argument("--pid-file")
    parser.add_argument("--fail", action="store_true")
    args = parser.parse_args()
    if args.fail:
        print("fake MCP server: failing on purpose", file=sys.stderr)
        sys.exit(3)
    if args.pid_file:
        with open(args.pid_file, "w") as f:
            f.write(str(os.getpid()))
    build(args.name).run("stdio")


if __name__ == "__main__":
    main()
