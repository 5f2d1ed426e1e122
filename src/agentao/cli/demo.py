"""`agentao demo`: a complete offline session, no API key, in a few seconds.

Our own agent (`agentao --acp`, a real subprocess) plays a shipped script
(`demo_script.json`, LLM_PROVIDER=SCRIPTED), with its state in a temporary
AGENTAO_HOME and a temporary workspace, driven by this client over real
pipes: streaming text, a thought, a plan, a file written and edited (diffs),
a shell command that asks permission (approved by the demo's policy), then a
second agent process that resumes the session with `session/load` (over ACP v2
`session/resume` with a replay), shows the
replayed history and answers one more prompt.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from importlib import resources
from typing import Any

from agentao import loops
from agentao.cli.render import ConsoleView
from agentao.client.client import Client
from agentao.client.config import AgentCommand, ClientPolicy
from agentao.client.errors import ClientError
from agentao.client.session import Session

FIRST_PROMPT = "Create hello.txt with a friendly greeting, then check it."
SECOND_PROMPT = "Please read hello.txt back to me."
SCRIPT = "demo_script.json"


def main(args: Any = None) -> int:
    """The `agentao demo` entry point."""
    view = ConsoleView()
    try:
        return loops.run(demo(view))
    except KeyboardInterrupt:
        return 130


async def demo(view: Any) -> int:
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        script = stack.enter_context(resources.as_file(resources.files("agentao.cli") / SCRIPT))
        home = stack.enter_context(tempfile.TemporaryDirectory(prefix="agentao-home-"))
        workspace = stack.enter_context(tempfile.TemporaryDirectory(prefix="agentao-demo-"))
        env = {"LLM_PROVIDER": "SCRIPTED", "AGENTAO_SCRIPT": str(script), "AGENTAO_HOME": home}
        command = AgentCommand.ours(env=env)
        policy = ClientPolicy(approve="all")
        try:
            session_id = await _first_process(command, policy, workspace, view)
            await _second_process(command, policy, workspace, session_id, view)
        except ClientError as exc:
            view.error(str(exc))
            return 1
    elapsed = time.monotonic() - started
    view.info(f"demo finished in {elapsed:.1f}s. Next: agentao run --agent 'CMD' 'PROMPT'")
    return 0


async def _first_process(
    command: AgentCommand, policy: ClientPolicy, workspace: str, view: Any
) -> str:
    async with Client(command, policy=policy) as client:
        info = client.agent_info
        view.info(
            f"agent: {getattr(info, 'name', '?')} {getattr(info, 'version', '')} (scripted, no LLM)"
        )
        session = await client.new_session(workspace)
        view.info(f"session {session.id} in {workspace}")
        await _prompt(session, FIRST_PROMPT, view)
        return session.id


async def _second_process(
    command: AgentCommand, policy: ClientPolicy, workspace: str, session_id: str, view: Any
) -> None:
    async with Client(command, policy=policy) as client:
        # v1: session/load; v2 has none: session/resume with a replay from the start
        method = "session/load" if client.supports("load") else "session/resume"
        view.info(f"a second agent process resumes the session ({method} replays its history):")
        if method == "session/load":
            session = await client.load_session(session_id, workspace)
        else:
            session = await client.resume_session(session_id, workspace, replay=True)
        view.replayed(session.drain())
        await _prompt(session, SECOND_PROMPT, view)


async def _prompt(session: Session, text: str, view: Any) -> None:
    view.info(f"you> {text}")
    async for event in session.prompt(text):
        view.event(event)


__all__ = ["main"]
