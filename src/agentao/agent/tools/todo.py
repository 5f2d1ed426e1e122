"""`todo_write`: the model's plan for the turn, shown to the user as an ACP plan update.

Each call replaces the whole list. The tool is `plan_only`: the turn loop yields
PlanChanged with the new entries instead of a tool call.
"""

from __future__ import annotations

from typing import Any, get_args

from agentao.agent.events import PlanEntry, PlanPriority, PlanStatus
from agentao.agent.tools.base import Tool, ToolContext, ToolError, ToolResult

__all__ = ["TodoWriteTool"]

_STATUSES = get_args(PlanStatus)
_PRIORITIES = get_args(PlanPriority)


class TodoWriteTool(Tool):
    name = "todo_write"
    kind = "think"
    plan_only = True
    description = (
        "Write the plan for the current task as a todo list; each call replaces the whole "
        "list. Use it for work with several steps, and keep exactly one item in_progress "
        "while you work on it."
    )
    parameters = {
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string", "description": "What to do"},
                        "status": {"type": "string", "enum": list(_STATUSES)},
                        "priority": {"type": "string", "enum": list(_PRIORITIES)},
                    },
                    "required": ["content", "status"],
                },
            }
        },
        "required": ["todos"],
    }

    def title(self, args: dict[str, Any]) -> str:
        return "Update plan"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        todos = args.get("todos")
        if not isinstance(todos, list):
            raise ToolError("`todos` must be a list of {content, status, priority?}")
        plan = tuple(_entry(i, item) for i, item in enumerate(todos))
        counts = {s: sum(e.status == s for e in plan) for s in _STATUSES}
        summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n) or "empty"
        return ToolResult(f"Plan updated: {len(plan)} items ({summary}).", plan=plan)


def _entry(index: int, item: Any) -> PlanEntry:
    where = f"todos[{index}]"
    if not isinstance(item, dict):
        raise ToolError(f"{where} must be an object with content and status")
    content, status = item.get("content"), item.get("status", "pending")
    priority = item.get("priority", "medium")
    if not isinstance(content, str) or not content.strip():
        raise ToolError(f"{where}.content must be a non-empty string")
    if status not in _STATUSES:
        raise ToolError(f"{where}.status must be one of {', '.join(_STATUSES)}, not {status!r}")
    if priority not in _PRIORITIES:
        raise ToolError(f"{where}.priority must be one of {', '.join(_PRIORITIES)}")
    return PlanEntry(content.strip(), status, priority)
