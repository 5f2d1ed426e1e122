"""Slash commands the client answers itself, never sent to the model: `/help`, `/model`.

`agentao run "/help"` lists these and the agent's own commands (its
`available_commands_update`, or v2's `availableCommands` in the session's
result); `/model` lists the models the agent offers (its session config option
of category `model`), the current one marked; `/model NAME` switches to NAME
(`run.apply_setting`, as `--model` does). Any other `/name` is the agent's own
command and goes to it as a prompt. Kept apart from `run` so that the
interactive client (`cli/chat/`) answers the same names the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

LOCAL_COMMANDS: dict[str, str] = {
    "help": "this list: the agent's commands and these local ones",
    "model": "the agent's models; /model NAME switches to NAME",
}


@dataclass(frozen=True, slots=True)
class LocalCommand:
    name: str  # a key of LOCAL_COMMANDS
    argument: str  # what follows the name, stripped ("" for none)


@dataclass(frozen=True, slots=True)
class ModelChoice:
    value: str
    name: str
    current: bool


def parse_local(prompt: str) -> LocalCommand | None:
    """`/help`, `/model`, `/model NAME` (a local command), else None (a prompt)."""
    text = prompt.strip()
    if not text.startswith("/"):
        return None
    name, _, argument = text[1:].partition(" ")
    return LocalCommand(name, argument.strip()) if name in LOCAL_COMMANDS else None


def help_lines(agent_commands: list[Any]) -> list[str]:
    """Plain lines: the agent's commands (name and description), then the local ones."""
    lines = ["agent commands (sent to the agent):"]
    # one the agent also offers under a local name is answered here: listed once, below
    agent_commands = [c for c in agent_commands if getattr(c, "name", "") not in LOCAL_COMMANDS]
    for command in agent_commands:
        name, what = getattr(command, "name", ""), getattr(command, "description", "") or ""
        lines.append(f"  /{name:<16} {what}".rstrip())
    if not agent_commands:
        lines.append("  (the agent offers none)")
    lines.append("local commands (answered here, not sent):")
    lines += [f"  /{name:<16} {what}" for name, what in LOCAL_COMMANDS.items()]
    return lines


def model_choices(session_response: Any) -> list[ModelChoice]:
    """The models the agent offers in the session's config options (v1 names an option
    `id`, v2 `configId`; either may carry the category `model`), in its order."""
    option = next(
        (o for o in getattr(session_response, "config_options", None) or () if _is_model(o)),
        None,
    )
    if option is None:
        return []
    current = getattr(option, "current_value", None)
    return [ModelChoice(value, name, value == current) for value, name in option_choices(option)]


def model_lines(choices: list[ModelChoice]) -> list[str]:
    if not choices:
        return ["this agent lists no models (/model NAME may still switch)"]
    return [f"{'*' if c.current else ' '} {c.value}  {c.name}".rstrip() for c in choices]


def _is_model(option: Any) -> bool:
    ids = (getattr(option, "id", None), getattr(option, "config_id", None))
    return getattr(option, "category", None) == "model" or "model" in ids


def option_choices(option: Any) -> list[tuple[str, str]]:
    """A select option's (value, name) pairs, grouped ones flattened (v1 and v2 alike)."""
    out: list[tuple[str, str]] = []
    for choice in getattr(option, "options", None) or ():
        value = getattr(choice, "value", None)
        if isinstance(value, str):
            out.append((value, getattr(choice, "name", "") or ""))
        out += option_choices(choice)
    return out


def config_id(option: Any) -> str:
    """A config option's id: v2 names it `configId`, v1 `id`."""
    return getattr(option, "config_id", None) or option.id


__all__ = [
    "LOCAL_COMMANDS",
    "LocalCommand",
    "ModelChoice",
    "config_id",
    "help_lines",
    "model_choices",
    "model_lines",
    "option_choices",
    "parse_local",
]
