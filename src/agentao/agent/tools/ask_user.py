"""`ask_user`: a free-form question to the human (ACP `_agentao.cn/ask_user`).

When nobody can answer, the Interaction returns "(user unavailable)" and the model gets
exactly that, so it can decide how to go on.
"""

from __future__ import annotations

from typing import Any

from agentao.agent.events import TextOutput
from agentao.agent.tools.base import Tool, ToolContext, ToolError, ToolResult

__all__ = ["AskUserTool"]


class AskUserTool(Tool):
    name = "ask_user"
    kind = "other"
    description = (
        "Ask the user a question and wait for the answer. Use it only when you cannot "
        "go on without their decision or information."
    )
    parameters = {
        "type": "object",
        "properties": {"question": {"type": "string", "description": "The question"}},
        "required": ["question"],
    }

    def title(self, args: dict[str, Any]) -> str:
        return f"Ask: {args.get('question', '')}"[:120]

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        question = args.get("question")
        if not isinstance(question, str) or not question.strip():
            raise ToolError("`question` must be a non-empty string")
        answer = await ctx.interaction.ask_user(question.strip())
        return ToolResult(answer, content=(TextOutput(answer),), raw_output={"answer": answer})
