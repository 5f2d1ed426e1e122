"""Checks a recorded agent conversation against the *stable* ACP schema (the contract).

Every message the agent sent must validate against its `$def` (found by `x-method`),
and carry no field outside that def's properties at its root: the envelope, the
params or result object, and a `session/update`'s `update` object. Extension methods
(`_vendor/...`) have no def; only their envelope is checked.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

STABLE = Path(__file__).resolve().parents[2] / "spec" / "acp-schema.v1.json"
ENVELOPE = {
    "request": {"jsonrpc", "id", "method", "params"},
    "notification": {"jsonrpc", "method", "params"},
    "result": {"jsonrpc", "id", "result"},
    "error": {"jsonrpc", "id", "error"},
}


@cache
def _defs() -> dict[str, Any]:
    return json.loads(STABLE.read_text())["$defs"]


@cache
def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator({"$defs": _defs(), "$ref": f"#/$defs/{name}"})


def _def_for(method: str, suffix: str) -> str | None:
    for name, d in _defs().items():
        if d.get("x-method") == method and name.endswith(suffix):
            return name
    return None


def _known(node: dict[str, Any]) -> set[str]:
    """Property names of a def, through `allOf` / `$ref`."""
    if "$ref" in node:
        node = _defs()[node["$ref"].rsplit("/", 1)[1]]
    names = set(node.get("properties", {}))
    for part in node.get("allOf", []):
        names |= _known(part)
    return names


def _update_variant(kind: str) -> dict[str, Any] | None:
    for variant in _defs()["SessionUpdate"]["oneOf"]:
        if variant["properties"]["sessionUpdate"].get("const") == kind:
            return variant
    return None


def problems(received: list[dict[str, Any]], sent: list[dict[str, Any]]) -> list[str]:
    """Everything wrong with what the agent sent; [] when it all follows the stable schema."""
    asked = {m["id"]: m["method"] for m in sent if "method" in m and "id" in m}
    found: list[str] = []
    for n, message in enumerate(received):
        found += [f"#{n} {message.get('method') or asked.get(message.get('id'))}: {p}"
                  for p in _check(message, asked)]  # fmt: skip
    return found


def _check(message: dict[str, Any], asked: dict[Any, str]) -> list[str]:
    if "method" in message:
        shape = "request" if "id" in message else "notification"
        suffix = "Request" if shape == "request" else "Notification"
        name = _def_for(message["method"], suffix)
        payload = message.get("params")
    elif "error" in message:
        shape, name, payload = "error", "Error", message["error"]
    else:
        shape, payload = "result", message.get("result")
        method = asked.get(message.get("id"), "")
        name = _def_for(method, "Response")
        if name is None and method == "session/cancel":
            return [] if payload == {} else [f"session/cancel answered {payload!r}"]
    out = [f"envelope field {k!r}" for k in sorted(set(message) - ENVELOPE[shape])]
    method = message.get("method") or asked.get(message.get("id"), "")
    if name is None:
        return out if method.startswith("_") else [*out, f"no stable $def for {method!r}"]
    out += [f"{e.json_path}: {e.message}" for e in _validator(name).iter_errors(payload)]
    if isinstance(payload, dict):
        out += [
            f"root field {k!r} not in {name}" for k in sorted(set(payload) - _known(_defs()[name]))
        ]
    if name == "SessionNotification" and isinstance(payload.get("update"), dict):
        out += _check_update(payload["update"])
    return out


def _check_update(update: dict[str, Any]) -> list[str]:
    variant = _update_variant(update.get("sessionUpdate", ""))
    if variant is None:
        return [f"update kind {update.get('sessionUpdate')!r} not in the stable schema"]
    extra = set(update) - _known(variant)
    return [f"update field {k!r} not in {update['sessionUpdate']}" for k in sorted(extra)]
