"""Ownership (issue 21, item 5): only `Conversations` (gateway/sessions.py) changes a
conversation's record or live state, or a task's or response's record.

Read from the source by AST, as tests/test_layers.py reads imports: a route that
assigns `conv.record.session_id = ...`, `conv.session = None` or `task.status = ...`,
or mutates such a field in place (`conv.attached.add(...)`), edits a registry's
records behind its owner's back. `self.field = ...` is a class's own state and is
not flagged; `self.conv.field = ...` is another object's and is.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterator
from pathlib import Path

from agentao.gateway.sessions import LiveConversation
from agentao.store.gateway_records import Conversation, ResponseRecord, TaskRecord

GATEWAY = Path(__file__).resolve().parents[2] / "src" / "agentao" / "gateway"
# sessions.py owns conversations; the task hub (tasklog.py) writes the task and response
# rows it is handed, stamped with this process's boot id.
OWNERS = {"sessions.py", "tasklog.py"}
RECORDS = (LiveConversation, Conversation, TaskRecord, ResponseRecord)
FIELDS = {f.name for record in RECORDS for f in dataclasses.fields(record)} - {"id"}
MUTATORS = {"add", "discard", "remove", "append", "extend", "update", "pop", "clear", "insert"}


def _stored_attributes(target: ast.expr) -> Iterator[ast.Attribute]:
    """The attributes an assignment target writes: `a.b`, each of `a.b, c.d`, and the
    container field of `a.b[k]`."""
    if isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            yield from _stored_attributes(element)
    elif isinstance(target, ast.Starred):
        yield from _stored_attributes(target.value)
    elif isinstance(target, ast.Subscript):
        if isinstance(target.value, ast.Attribute):
            yield target.value
    elif isinstance(target, ast.Attribute):
        yield target


def _is_mutation(node: ast.AST) -> bool:
    """`x.field.add(...)` and the like: a field changed in place."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in MUTATORS
        and isinstance(node.func.value, ast.Attribute)
    )


def _is_own(attribute: ast.Attribute) -> bool:
    return isinstance(attribute.value, ast.Name) and attribute.value.id == "self"


def record_edits(source: str) -> list[str]:
    """Every place `source` writes a field of a conversation, task or response record."""
    edits: list[ast.Attribute] = []
    for node in ast.walk(ast.parse(source)):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif _is_mutation(node):
            edits.append(node.func.value)  # type: ignore[attr-defined]
        for target in targets:
            edits.extend(_stored_attributes(target))
    return sorted(
        f"{e.lineno}: {ast.unparse(e)}" for e in edits if e.attr in FIELDS and not _is_own(e)
    )


def test_no_gateway_module_but_the_owner_edits_a_record() -> None:
    edits = {
        name: found
        for path in sorted(GATEWAY.rglob("*.py"))
        if (name := str(path.relative_to(GATEWAY))) not in OWNERS
        if (found := record_edits(path.read_text()))
    }
    assert edits == {}


def test_the_check_sees_each_kind_of_edit() -> None:
    route = """
async def handler(conv, task, relay):
    conv.record.session_id, conv.session = None, None
    task.status = "ended"
    relay.conv.attached.add("c1")
    conv.record.session_params["cwd"] = "/"
    self.lease = 3            # a class's own state: not an edit of another's record
    seen[conv.id] = 1         # a key, not a write
"""
    assert record_edits(route) == [
        "3: conv.record.session_id",
        "3: conv.session",
        "4: task.status",
        "5: relay.conv.attached",
        "6: conv.record.session_params",
    ]
