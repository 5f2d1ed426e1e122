"""Sampling knobs (`temperature`, `top_p`, the token limits) as the agent's config options.

An agent turn has no sampling parameters of its own, and OpenAI clients send these by
default, so they are accepted (their types and ranges checked: a 400 naming the field) and
passed on only where the agent's session offers a matching config option: one whose `id`
or `category` names the knob (`max_tokens` for `max_tokens`, `max_completion_tokens` and
Responses' `max_output_tokens`), and which has the value asked for (a select option's
value id equal to it as a number: `0.5` matches "0.5"). Anything else is ignored, and so is
a value the key's ceiling may not set (`[agents.NAME.ceilings.*] options`), since a
client cannot leave the knob out. A value already current is not set again.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any

import msgspec

from agentao.client import AgentError, Session
from agentao.gateway.ceilings import CeilingRules
from agentao.protocol.decode import to_builtins

# The body field -> the knob an option must name.
KNOBS = {
    "temperature": "temperature",
    "top_p": "top_p",
    "max_tokens": "max_tokens",
    "max_completion_tokens": "max_tokens",
    "max_output_tokens": "max_tokens",
}

Knobs = tuple[tuple[str, float], ...]  # (knob, value) of one request
# The ranges OpenAI takes; outside them a 400 names the field.
Temperature = Annotated[float, msgspec.Meta(ge=0, le=2)]
TopP = Annotated[float, msgspec.Meta(ge=0, le=1)]
TokenLimit = Annotated[int, msgspec.Meta(ge=1)]


def requested_knobs(fields: dict[str, float | int | None]) -> Knobs:
    """The knobs a request sets (body field -> value; None: not sent)."""
    return tuple((KNOBS[name], value) for name, value in fields.items() if value is not None)


def matching_options(config_options: Iterable[Any], knobs: Knobs) -> list[tuple[str, str]]:
    """(option id, value id) for each knob a select option of the agent's offers."""
    options = [o for o in config_options if isinstance(o, dict)]
    out = []
    for knob, value in knobs:
        for option in options:
            if knob not in (option.get("id"), option.get("category")):
                continue
            match = next((v for v in _values(option) if _same(v, value)), None)
            if match is not None and match != option.get("currentValue"):
                out.append((str(option["id"]), match))
            break
    return out


async def apply_knobs(session: Session, rules: CeilingRules, knobs: Knobs) -> None:
    """Set the session's options the request's knobs match (see the module's docstring)."""
    if not knobs:
        return
    offered = to_builtins(session.response).get("configOptions") or ()
    for option_id, value in matching_options(offered, knobs):
        if not rules.allows_option(option_id, value):
            continue
        try:
            await session.set_config_option(option_id, value)
        except AgentError:  # the agent refuses it after all: left as it is, as documented
            continue


def _values(option: dict[str, Any]) -> list[str]:
    """A select option's value ids, its groups' included."""
    out = []
    for entry in option.get("options") or ():
        if not isinstance(entry, dict):
            continue
        if "value" in entry:
            out.append(str(entry["value"]))
        out.extend(str(e.get("value")) for e in entry.get("options") or () if isinstance(e, dict))
    return out


def _same(value_id: str, value: float) -> bool:
    try:
        return float(value_id) == float(value)
    except ValueError:
        return False


__all__ = [
    "KNOBS",
    "Knobs",
    "Temperature",
    "TokenLimit",
    "TopP",
    "apply_knobs",
    "matching_options",
    "requested_knobs",
]
