"""Drive any ACP agent from Python with agentao.client.

    python examples/client_quickstart.py "qwen --acp" "What does this project do?"
    python examples/client_quickstart.py "" "hello"          # "" = agentao's own agent

Streams the answer, prints each tool call once it finishes, approves reads
(read/search/think) and rejects everything else.
"""

from __future__ import annotations

import asyncio
import sys

from agentao.client import (
    AgentCommand,
    Client,
    ClientError,
    ClientPolicy,
    PermissionDecision,
    TurnEnd,
    Update,
)


async def main(agent: str, prompt: str) -> int:
    command = AgentCommand.parse(agent) if agent else AgentCommand.ours()
    try:
        async with Client(command, policy=ClientPolicy(approve="reads")) as client:
            session = await client.new_session(".")
            async for event in session.prompt(prompt):
                match event:
                    case Update(kind="agent_message_chunk", text=str(text)):
                        print(text, end="", flush=True)
                    case Update(tool_call=tool) if tool is not None and tool.status == "completed":
                        print(f"\n[{tool.kind}] {tool.title}: done")
                    case PermissionDecision(approved=approved, request=request):
                        print(f"\n[permission] {request.title}: {'yes' if approved else 'no'}")
                    case TurnEnd(stop_reason=reason):
                        print(f"\n({reason})")
    except ClientError as exc:  # could not start, disconnected, an error answer, ...
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(sys.argv[1], sys.argv[2])))
