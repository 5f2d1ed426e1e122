"""Checks a recorded ACP v2 conversation, both directions, against the official v2 schema
(spec/acp-schema.v2.json, unchanged from `@agentclientprotocol/sdk` 2.4.0).

A recording is the JSON lines `tests/peers/v2_client.mjs` prints (and
tests/data/real-agent-transcripts holds): `{"t", "dir": "send" | "recv", "msg"}`. Every
message must validate against the schema's root (a JSON-RPC message of the client, the
agent or the protocol level) and against its method's `$def` (found by `x-method`): a
request's or notification's params, a result against the answered request's response.
Results are matched to requests of the other direction (each side numbers its own
requests). A `session/update` must be of a kind the schema names: its `other` catch-all
would pass a misspelt kind. Extension methods (`_vendor/...`) have no def: only the root
check applies to them.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

__all__ = ["V2_SCHEMA", "problems"]

V2_SCHEMA = Path(__file__).resolve().parents[2] / "spec" / "acp-schema.v2.json"
_OTHER_SIDE = {"send": "recv", "recv": "send"}


@cache
def _schema() -> dict[str, Any]:
    return json.loads(V2_SCHEMA.read_text())


@cache
def _validator(name: str | None) -> Draft202012Validator:
    """The root schema (name None) or one `$def`."""
    schema = _schema() if name is None else {"$defs": _schema()["$defs"], "$ref": f"#/$defs/{name}"}
    return Draft202012Validator(schema)


@cache
def _def_for(method: str, suffix: str) -> str | None:
    for name, definition in _schema()["$defs"].items():
        if definition.get("x-method") == method and name.endswith(suffix):
            return name
    return None


@cache
def _update_kinds() -> frozenset[str]:
    variants = _schema()["$defs"]["SessionUpdate"]["anyOf"]
    return frozenset(
        v["properties"]["sessionUpdate"]["const"] for v in variants if "title" not in v
    )


def problems(lines: list[dict[str, Any]]) -> list[str]:
    """Everything in the recording that the v2 schema does not allow; [] when all of it does."""
    asked: dict[str, dict[Any, str]] = {"send": {}, "recv": {}}
    found: list[str] = []
    for n, line in enumerate(lines):
        message, direction = line["msg"], line["dir"]
        if "method" in message and "id" in message:
            asked[direction][message["id"]] = message["method"]
        method = message.get("method") or asked[_OTHER_SIDE[direction]].get(message.get("id"), "?")
        found += [f"#{n} {direction} {method}: {p}" for p in _check(message, method)]
    return found


def _check(message: dict[str, Any], method: str) -> list[str]:
    out = [f"root: {e.message[:200]}" for e in _validator(None).iter_errors(message)]
    if "error" in message:
        return out
    if "method" in message:
        suffix = "Request" if "id" in message else "Notification"
        name, payload = _def_for(method, suffix), message.get("params")
    else:
        name, payload = _def_for(method, "Response"), message.get("result")
    if name is None:
        return out if method.startswith(("_", "$/")) else [*out, f"no v2 $def for {method!r}"]
    out += [f"{e.json_path}: {e.message[:200]}" for e in _validator(name).iter_errors(payload)]
    if method == "session/update" and isinstance(payload, dict):
        kind = (payload.get("update") or {}).get("sessionUpdate", "")
        if kind not in _update_kinds() and not kind.startswith("_"):
            out.append(f"update kind {kind!r} is not in the v2 schema")
    return out
