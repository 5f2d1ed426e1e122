"""Check any ACP message against the official schema of its protocol version (v1 or v2).

    problems = check(message, version=2, method="initialize")   # [] when it follows the schema
    problems = check_all(agent.received, agent.sent, version=1)  # what one side received
    problems = check_recording(lines, version=2)  # a recording of both directions

A request or notification is validated against the `$def` whose `x-method` is its method
(`...Request` / `...Notification`), a result against that method's `...Response`, an error
against `Error` (and a -32022's `data` against v2's UnsupportedProtocolVersionErrorData). The
schemas are the *stable* ones in spec/ (the contract every peer reads), by Draft 2020-12
(`jsonschema`). Beyond the schema, no field may sit outside its def at the root of a message:
the envelope, the params or result, and a `session/update`'s `update` (custom data belongs
under `_meta`). Extension methods (`_vendor/...`) have no def; only their envelope is checked.
A method only the unstable schema has (v2's `session/fork`, `auth/status`: served by a
peer that advertised it) is checked against the unstable schema's defs instead.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

SPEC = Path(__file__).resolve().parents[1] / "spec"
ENVELOPE = {
    "request": {"jsonrpc", "id", "method", "params"},
    "notification": {"jsonrpc", "method", "params"},
    "result": {"jsonrpc", "id", "result"},
    "error": {"jsonrpc", "id", "error"},
}
UNSUPPORTED_VERSION = -32022


@cache
def defs(version: int) -> dict[str, Any]:
    """The stable schema's `$defs` of `version`."""
    return json.loads((SPEC / f"acp-schema.v{version}.json").read_text())["$defs"]


@cache
def drafted(version: int) -> dict[str, Any]:
    """The unstable schema's `$defs`: the stable ones and the fields still in draft (v2's
    `usage` on `idle`, say), which a peer may send; a field in neither is an error."""
    return json.loads((SPEC / f"acp-schema.v{version}.unstable.json").read_text())["$defs"]


@cache
def _validator(version: int, name: str) -> Draft202012Validator:
    # a def only the unstable schema has is validated within the unstable schema
    source = defs(version) if name in defs(version) else drafted(version)
    return Draft202012Validator({"$defs": source, "$ref": f"#/$defs/{name}"})


def def_for(version: int, method: str, suffix: str) -> str | None:
    """The `$def` of `method`'s Request, Notification or Response in `version`, if any:
    the stable schema's, else (a method still in draft) the unstable schema's."""
    for source in (defs(version), drafted(version)):
        for name, d in source.items():
            if d.get("x-method") == method and name.endswith(suffix):
                return name
    return None


def validate(version: int, name: str, value: Any) -> list[str]:
    """Schema errors of `value` as the `$def` `name`, each with its JSON path."""
    return [f"{e.json_path}: {e.message}" for e in _validator(version, name).iter_errors(value)]


def check(message: dict[str, Any], version: int, method: str | None = None) -> list[str]:
    """Everything wrong with one message; `method` names the request a response answers."""
    if "method" in message:
        method = message["method"]
        shape = "request" if "id" in message else "notification"
        name = def_for(version, method, "Request" if shape == "request" else "Notification")
        payload = message.get("params")
    elif "error" in message:
        shape, name, payload = "error", "Error", message["error"]
    else:
        shape, payload = "result", message.get("result")
        name = def_for(version, method or "", "Response")
        if name is None and method == "session/cancel":  # a notification sent with an id
            return [] if payload == {} else [f"session/cancel answered {payload!r}"]
    out = [f"envelope field {k!r}" for k in sorted(set(message) - ENVELOPE[shape])]
    if name is None:
        known = (method or "").startswith("_")
        return out if known else [*out, f"no v{version} $def for {method!r}"]
    out += validate(version, name, payload)
    if isinstance(payload, dict):
        extra = set(payload) - _known(version, drafted(version).get(name) or defs(version)[name])
        out += [f"root field {k!r} not in {name}" for k in sorted(extra)]
        out += _check_inner(version, name, payload)
    return out


def check_all(
    received: list[dict[str, Any]], sent: list[dict[str, Any]], version: int
) -> list[str]:
    """Everything wrong with what one side received from the other (`sent`: what we sent it,
    to know which request each response answers); [] when all of it follows the schema."""
    asked = {m["id"]: m["method"] for m in sent if "method" in m and "id" in m}
    found: list[str] = []
    for n, message in enumerate(received):
        method = message.get("method") or asked.get(message.get("id"))
        found += [f"#{n} {method}: {p}" for p in check(message, version, method)]
    return found


def check_recording(lines: list[dict[str, Any]], version: int) -> list[str]:
    """Everything wrong with a recorded conversation, both directions: the JSON lines
    `{"t", "dir": "send" | "recv", "msg"}` of tests/peers/v2_client.mjs and
    tests/data/real-agent-transcripts. Each side numbers its own requests, so a response
    answers a request of the other direction."""
    asked: dict[str, dict[Any, str]] = {"send": {}, "recv": {}}
    other = {"send": "recv", "recv": "send"}
    found: list[str] = []
    for n, line in enumerate(lines):
        message, direction = line["msg"], line["dir"]
        if "method" in message and "id" in message:
            asked[direction][message["id"]] = message["method"]
        method = message.get("method") or asked[other[direction]].get(message.get("id"))
        found += [f"#{n} {direction} {method}: {p}" for p in check(message, version, method)]
    return found


def _check_inner(version: int, name: str, payload: dict[str, Any]) -> list[str]:
    if name == "Error" and payload.get("code") == UNSUPPORTED_VERSION and version >= 2:
        return validate(version, "UnsupportedProtocolVersionErrorData", payload.get("data"))
    if "SessionNotification" in name and isinstance(payload.get("update"), dict):
        return _check_update(version, payload["update"])
    return []


def _known(version: int, node: dict[str, Any]) -> set[str]:
    """Property names of a def, through `allOf` / `$ref`, and of the variants of a def that
    is itself a union of its own (v2's idle state: stopReason "error" adds `error`)."""
    if "$ref" in node:
        node = drafted(version)[node["$ref"].rsplit("/", 1)[1]]
    names = set(node.get("properties", {}))
    for part in [*node.get("allOf", []), *_own_variants(node)]:
        names |= _known(version, part)
    return names


def _own_variants(node: dict[str, Any]) -> list[dict[str, Any]]:
    """The variants of a def that has properties of its own besides its union (not a bare
    union, whose variants `_inner_union_fields` reads)."""
    if "properties" not in node:
        return []
    return list(node.get("anyOf") or node.get("oneOf") or [])


def _check_update(version: int, update: dict[str, Any]) -> list[str]:
    union = defs(version)["SessionUpdate"]
    kind = update.get("sessionUpdate", "")
    for variant in union.get("oneOf") or union.get("anyOf"):
        if variant.get("properties", {}).get("sessionUpdate", {}).get("const") == kind:
            extra = set(update) - _known(version, variant) - _inner_union_fields(version, variant)
            return [f"update field {k!r} not in {kind}" for k in sorted(extra)]
    return [f"update kind {kind!r} not in the v{version} schema"]


def _inner_union_fields(version: int, variant: dict[str, Any]) -> set[str]:
    """Fields of a variant that is itself a union (v2's state_update is a StateUpdate)."""
    names: set[str] = set()
    for part in variant.get("allOf", []):
        target = drafted(version)[part["$ref"].rsplit("/", 1)[1]] if "$ref" in part else part
        for inner in target.get("anyOf") or target.get("oneOf") or []:
            names |= _known(version, inner)
    return names


__all__ = ["check", "check_all", "check_recording", "def_for", "defs", "drafted", "validate"]
