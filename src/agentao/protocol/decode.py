"""Decoding at the edge: JSON values (dicts from a parsed line) into the generated structs.

    params = decode_strict(schema.InitializeRequest, msg["params"])     # what we are sent
    update = decode_lenient(schema.SessionNotification, msg["params"])  # a peer's updates
    line = encode(schema.PromptResponse(stop_reason="end_turn"))          # -> bytes

Theory of operation. The fast path is one `msgspec.convert(..., strict=True)`: valid input costs
nothing more, whichever mode. Only when it fails do we look at the error. msgspec names the
failing place as a path (`$.update.content[3].type`); we walk that path through the raw data and
the types side by side, collect every place along it that the schema lets us repair, apply the
innermost one to a private copy of the data and convert again, at most MAX_REPAIRS times:

- `x-deserialize-default-on-error` field: removed (so it takes its default; a required list
  becomes `[]`), strict mode never does this;
- `x-deserialize-skip-invalid-items` array: the failing item is dropped (lenient only);
- `x-deserialize-default-on-null` field holding null: reset the same way (both modes: the schema
  declares null valid there, e.g. `"args": null` for a stdio MCP server);
- a tagged union value whose tag is a string this schema does not know (a newer peer's
  `sessionUpdate` kind, content block type, ...): kept whole as an `UnknownVariant` (lenient
  only). A valid placeholder stands in for the retry and is swapped for the UnknownVariant in
  the result, so no update is ever dropped for being new.

Unions msgspec cannot dispatch (`schema.DispatchedUnion`: McpServer, AuthMethod, ...) reach
`_hook`, which picks the variant by tag, by absence of the tag, or by required keys, and
converts it with the same hook. Their errors carry both paths; `_normalize` joins them into one.

`encode` and `to_builtins` write an UnknownVariant back as the raw object it was read from.
The same functions serve every protocol version's types (v2's share v1's runtime classes).
"""

from __future__ import annotations

import re
import sys
import types
import typing
from functools import cache
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

import msgspec

from agentao.protocol.schema import DispatchedUnion, Lenience, UnknownVariant

__all__ = [
    "MAX_REPAIRS",
    "decode_lenient",
    "decode_strict",
    "encode",
    "json_of",
    "params_of_line",
    "passed_decoders",
    "raw_of",
    "to_builtins",
]

T = TypeVar("T")
MAX_REPAIRS = 64  # repairs of one message before decode_lenient gives up and raises
_AT = re.compile(r" - at `(\$[^`]*)`")
_STEP = re.compile(r"\.([^.\[]+)|\[(\d+)\]|(\[\.\.\.\])")
_MISSING = object()
_UNMARKED = Lenience(frozenset(), frozenset(), frozenset())


# A type's tables live in the generated module that defines it (protocol.schema for v1,
# protocol.v2.schema for v2): one decoder serves every version, and a v1 connection never
# imports v2's types.
def _union_dispatch(marker: type) -> Any:
    return sys.modules[marker.__module__].UNION_DISPATCH[marker]  # type: ignore[attr-defined]


def _lenience(tp: type) -> Lenience:
    tables = getattr(sys.modules[tp.__module__], "LENIENT_FIELDS", {})
    return tables.get(tp, _UNMARKED)  # type: ignore[no-any-return]


def decode_strict(tp: type[T], obj: Any) -> T:
    """`obj` as `tp`, exactly as the schema says; raise `msgspec.ValidationError` naming the
    path, e.g. "Expected `int`, got `bool` - at `$.protocolVersion`"."""
    try:
        return msgspec.convert(obj, tp, strict=True, dec_hook=_strict_hook)
    except msgspec.ValidationError as exc:
        return _Repair(tp, obj, lenient=False).run(exc)


def decode_lenient(tp: type[T], obj: Any) -> T:
    """Like decode_strict, but honours the schema's x-deserialize-* marks and keeps unknown
    union variants (see the module docstring); raises only when no repair applies."""
    try:
        return msgspec.convert(obj, tp, strict=True, dec_hook=_lenient_hook)
    except msgspec.ValidationError as exc:
        return _Repair(tp, obj, lenient=True).run(exc)


def params_of_line(tp: type[T], line: bytes, *, lenient: bool) -> T:
    """The `params` member of a JSON-RPC line as `tp`, read from the line's bytes with no
    dicts made in between (msgspec builds a struct from JSON in half the time it takes to
    convert one from dicts: once per streamed update). As decode_strict's fast path, the
    same hook, the same result; raises `msgspec.ValidationError` when the params do not
    fit as they stand, and the caller takes the dict path, which repairs and names."""
    return _line_decoder(tp, lenient)(line).params  # type: ignore[no-any-return]


@cache
def _line_decoder(tp: Any, lenient: bool) -> Any:
    # Only `params` is declared: the envelope's other members are skipped, not built
    # (the message's dict, read once already, answers for them). On a repeated key the
    # last one counts, as in that dict.
    envelope = msgspec.defstruct("ParamsOfLine", [("params", tp)])
    hook = _lenient_hook if lenient else _strict_hook
    return msgspec.json.Decoder(envelope, strict=True, dec_hook=hook).decode


@cache
def passed_decoders(tp: Any, member: str, lenient: bool) -> tuple[Any, Any]:
    """Two decoders of a whole line holding a call (as connection.py reads it): `head`
    reads its envelope (`jsonrpc`, `method`, `id`, each unset when absent) and, of its
    params, only `member`, as its bytes (msgspec.Raw) for a relay to pass on unchanged;
    `whole` reads its params into `tp`, as decode_strict's (or decode_lenient's) fast path
    makes it. Two passes over the line, where reading the envelope first and then its
    params twice took three.
    Both raise `msgspec.DecodeError` (a ValidationError too) when the line does not fit as
    it stands: the caller takes the dict path, which repairs and names."""
    hook = _lenient_hook if lenient else _strict_hook
    wire_name = {f.name: f.encode_name for f in msgspec.structs.fields(tp)}[member]
    kept = msgspec.defstruct("PassedMember", [(member, msgspec.Raw)], rename={member: wire_name})
    unset = msgspec.UNSET
    # Members of no interest (result, error, any other) are skipped, not built; on a
    # repeated key the last one counts, as in a parsed dict.
    head = msgspec.defstruct(
        "PassedHead",
        [
            ("jsonrpc", Any, unset),
            ("method", Any, unset),
            ("id", Any, unset),
            ("params", kept | msgspec.UnsetType, unset),
        ],
        gc=False,
    )
    whole = msgspec.defstruct("PassedParams", [("params", tp)], gc=False)
    typed = msgspec.json.Decoder(whole, strict=True, dec_hook=hook).decode
    return msgspec.json.Decoder(head).decode, typed


def _finite_or_literal(literal: str) -> Any:
    value = float(literal)
    return value if value - value == 0 else literal  # inf and nan fail the test


# Bytes a relay passed on were read with their unknown members skipped, so they may hold
# a number no float can (`1e999`): read, it stays its literal rather than failing the read.
_json_of_bytes = msgspec.json.Decoder(float_hook=_finite_or_literal).decode


def json_of(value: Any) -> Any:
    """A member kept as its bytes (msgspec.Raw, see `passed_decoders`) as JSON values,
    made anew on each call; anything else as it is."""
    return _json_of_bytes(value) if type(value) is msgspec.Raw else value


def raw_of(value: Any) -> msgspec.Raw:
    """JSON values (or a struct) as bytes to pass on; bytes kept already as they are."""
    return value if type(value) is msgspec.Raw else msgspec.Raw(encode(value))


def _enc_hook(obj: Any) -> Any:
    if isinstance(obj, UnknownVariant):
        return obj.raw
    raise TypeError(f"Encoding objects of type {type(obj).__name__} is unsupported")


_encoder = msgspec.json.Encoder(enc_hook=_enc_hook)


def encode(obj: Any) -> bytes:
    """JSON bytes (no newline) of a struct, a union value or plain data."""
    return _encoder.encode(obj)


def to_builtins(obj: Any) -> Any:
    """Dicts, lists and scalars for `obj`, wire names as keys."""
    return msgspec.to_builtins(obj, enc_hook=_enc_hook)


# ---------------------------------------------------------------------------------------------
# Dispatched unions


class _Dispatch(typing.NamedTuple):
    tag_field: str | None
    by_tag: dict[Any, type]  # tagged variants, plus untagged ones by their optional tag
    untagged: tuple[type, ...]
    open: bool


@cache
def _dispatch(marker: type) -> _Dispatch:
    spec = _union_dispatch(marker)
    by_tag = dict(spec.tagged)
    for cls in spec.untagged:
        field = _fields(cls).get(spec.tag_field or "")
        for arg in get_args(field.type) if field else ():
            by_tag.update({v: cls for v in get_args(arg) if get_origin(arg) is Literal})
    return _Dispatch(spec.tag_field, by_tag, spec.untagged, spec.open)


@cache
def _unknown_class(marker: type) -> type:
    """An UnknownVariant that is also a `marker` (msgspec checks what the hook returns)."""
    return type(f"Unknown{marker.__name__}", (UnknownVariant, marker), {"__slots__": ()})


def _pick(marker: type, obj: Any, lenient: bool) -> type | UnknownVariant:
    """The variant class for a wire object, or an UnknownVariant; ValueError if invalid."""
    d = _dispatch(marker)
    if not isinstance(obj, dict):
        raise ValueError(f"Expected `object`, got `{_kind(obj)}`")
    if d.tag_field is not None and d.tag_field in obj:
        tag = obj[d.tag_field]
        if isinstance(tag, str) and tag in d.by_tag:
            return d.by_tag[tag]
        if isinstance(tag, str) and (d.open or lenient):
            return _unknown_class(marker)(obj, d.tag_field)
        if not isinstance(tag, str):
            raise ValueError(f"Expected `str`, got `{_kind(tag)}` - at `$.{d.tag_field}`")
        raise ValueError(f"Invalid value {tag!r} - at `$.{d.tag_field}`")
    if not d.untagged:
        raise ValueError(f"Object missing required field `{d.tag_field}`")
    for cls in d.untagged:  # the first whose required keys are all present
        if _required(cls) <= obj.keys():
            return cls
    return d.untagged[0]


def _make_hook(lenient: bool):
    def hook(tp: type, obj: Any) -> Any:
        if not (isinstance(tp, type) and issubclass(tp, DispatchedUnion)):
            raise ValueError(f"Expected `{tp!r}`")
        variant = _pick(tp, obj, lenient)
        if isinstance(variant, UnknownVariant):
            return variant
        try:
            return msgspec.convert(obj, variant, strict=True, dec_hook=hook)
        except msgspec.ValidationError as exc:  # msgspec appends our position to the message
            raise ValueError(str(exc)) from None

    return hook


_strict_hook = _make_hook(lenient=False)
_lenient_hook = _make_hook(lenient=True)


# ---------------------------------------------------------------------------------------------
# Type helpers (each computed once per type)


@cache
def _fields(cls: type) -> dict[str, msgspec.structs.FieldInfo]:
    """Wire name -> field of a struct class."""
    return {f.encode_name: f for f in msgspec.structs.fields(cls)}


@cache
def _required(cls: type) -> frozenset[str]:
    return frozenset(w for w, f in _fields(cls).items() if f.required)


def _is_struct(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, msgspec.Struct)


def _members(tp: Any) -> tuple[Any, ...]:
    """The members of a union type, else ()."""
    return get_args(tp) if get_origin(tp) in (Union, types.UnionType) else ()


@cache
def _tags(union: Any) -> tuple[str, dict[str, type]] | None:
    """(tag field, tag -> struct) of a msgspec tagged union, else None."""
    structs = [m for m in _members(union) if _is_struct(m)]
    configs = [m.__struct_config__ for m in structs]
    if len(structs) < 2 or any(c.tag_field is None for c in configs):
        return None
    return configs[0].tag_field, {c.tag: m for c, m in zip(configs, structs, strict=True)}


def _kind(value: Any) -> str:
    names = {dict: "object", list: "array", str: "str", bool: "bool", int: "int", float: "float"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


# ---------------------------------------------------------------------------------------------
# Repair


class _Unknown(typing.NamedTuple):
    union: Any
    tag_field: str


def _resolve(tp: Any, node: Any, lenient: bool) -> Any:
    """The concrete type that decodes `node` where `tp` is expected (unions resolved), an
    `_Unknown` for an unknown tag, or None when the walk cannot go further."""
    while True:
        if get_origin(tp) is Annotated:
            tp = get_args(tp)[0]
        elif members := _members(tp):
            if tags := _tags(tp):
                tag = node.get(tags[0]) if isinstance(node, dict) else None
                if not isinstance(tag, str):
                    return None
                return tags[1].get(tag) or _Unknown(tp, tags[0])
            fits = [m for m in members if _fits(m, node)]
            if len(fits) != 1:
                return None
            tp = fits[0]
        elif _is_marker(tp):
            try:
                picked = _pick(tp, node, lenient)
            except ValueError:
                return None
            return None if isinstance(picked, UnknownVariant) else picked
        else:
            return tp


def _fits(tp: Any, node: Any) -> bool:
    """Whether a union member could hold a JSON object/array `node` (scalars end the walk)."""
    if isinstance(node, dict):
        return get_origin(tp) is dict or _is_struct(tp) or _is_marker(tp)
    return isinstance(node, list) and get_origin(tp) is list


def _is_marker(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, DispatchedUnion)


def _empty(tp: Any) -> Any:
    """The reset value of a required field, or _MISSING when it has none."""
    if get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    if type(None) in _members(tp) or tp is Any:
        return None
    origin = get_origin(tp) or tp
    return [] if origin is list else {} if origin is dict else _MISSING


@cache
def _placeholder(tp: Any) -> Any:
    """A minimal valid wire value of `tp` (a stand-in for an unknown variant during a retry)."""
    meta = {}
    if get_origin(tp) is Annotated:
        tp, *extras = get_args(tp)
        meta = {
            k: getattr(m, k)
            for m in extras
            for k in ("ge", "min_length")
            if getattr(m, k, None) is not None
        }
    if members := _members(tp):
        if type(None) in members:
            return None
        options = [m for m in members if _is_struct(m)] or list(members)
        return _placeholder(min(options, key=lambda m: len(_required(m)) if _is_struct(m) else 0))
    if _is_marker(tp):
        spec = _union_dispatch(tp)
        return _placeholder(next(iter(spec.tagged.values()), None) or spec.untagged[0])
    if _is_struct(tp):
        config = tp.__struct_config__
        out = {config.tag_field: config.tag} if config.tag_field else {}
        return out | {w: _placeholder(f.type) for w, f in _fields(tp).items() if f.required}
    if get_origin(tp) is Literal:
        return get_args(tp)[0]
    simple = {str: "x" * meta.get("min_length", 0), int: meta.get("ge", 0), float: 0.0, bool: False}
    return simple.get(tp, [] if (get_origin(tp) or tp) is list else {} if tp is not Any else None)


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _normalize(exc: msgspec.ValidationError) -> tuple[msgspec.ValidationError, list]:
    """One error with one joined path (hooks nest them), and that path as steps."""
    text = str(exc)
    paths = _AT.findall(text)
    message = _AT.split(text, maxsplit=1)[0]
    path = "$" + "".join(p[1:] for p in reversed(paths))
    steps = [m[0] or (int(m[1]) if m[1] else None) for m in _STEP.findall(path[1:])]
    if len(paths) > 1:
        exc = msgspec.ValidationError(f"{message} - at `{path}`")
    return exc, steps


class _Repair:
    """The slow path: patch a copy of the data until it converts (see module docstring)."""

    def __init__(self, tp: Any, obj: Any, lenient: bool):
        self.tp, self.lenient = tp, lenient
        self.data = _copy(obj)
        self.unknowns: dict[tuple, UnknownVariant] = {}  # path -> value to swap in

    def run(self, exc: msgspec.ValidationError) -> Any:
        hook = _lenient_hook if self.lenient else _strict_hook
        for _ in range(MAX_REPAIRS):
            error, steps = _normalize(exc)
            fix = self._find(steps)
            if fix is None:
                raise error from None
            if fix == ():
                return self.unknowns[()]
            try:
                result = msgspec.convert(self.data, self.tp, strict=True, dec_hook=hook)
            except msgspec.ValidationError as again:
                exc = again
                continue
            for path, value in self.unknowns.items():
                _assign(result, path, value)
            return result
        raise _normalize(exc)[0] from None

    def _find(self, steps: list) -> tuple | None:
        """Apply the innermost repair along `steps`; its path, () for an unknown root, or None."""
        candidates = []  # (action, container, key, path, field) from outermost to innermost
        tp, node, parent, key, path = self.tp, self.data, None, None, ()
        for i, step in enumerate([*steps, _MISSING]):
            tp = _resolve(tp, node, self.lenient)
            if isinstance(tp, _Unknown):
                if self.lenient and isinstance(node, dict):
                    candidates.append(("unknown", parent, key, path, tp))
                break
            if step is _MISSING or step is None or tp is None:
                break
            if _is_struct(tp) and isinstance(node, dict) and isinstance(step, str):
                field = _fields(tp).get(step)
                if field is None or step not in node:
                    break
                marks = _lenience(tp)
                nulled = step in marks.on_null and node[step] is None  # both modes
                if nulled or (self.lenient and step in marks.on_error):
                    candidates.append(("reset", node, step, (*path, step), field))
                nxt = steps[i + 1] if i + 1 < len(steps) else None
                if self.lenient and step in marks.skip_items and isinstance(nxt, int):
                    candidates.append(("drop", node[step], nxt, (*path, step), field))
                tp = field.type
            elif isinstance(node, list) and isinstance(step, int) and step < len(node):
                tp = get_args(tp)[0] if get_origin(tp) is list else None
            elif isinstance(node, dict) and get_origin(tp) is dict and step in node:
                tp = get_args(tp)[1]
            else:
                break
            parent, key, node, path = node, step, node[step], (*path, step)
        for action, container, k, p, extra in reversed(candidates):
            if self._apply(action, container, k, p, extra):
                return p
        return None

    def _apply(self, action: str, container: Any, key: Any, path: tuple, extra: Any) -> bool:
        if action == "unknown":
            raw = self.data if container is None else container[key]
            self.unknowns[path] = UnknownVariant(raw, extra.tag_field)
            if container is not None:
                container[key] = _copy(_placeholder(extra.union))
            return True
        if action == "drop":
            container.pop(key)
            self._forget(path, dropped=key)
            return True
        field = extra  # reset: take the default, or the empty value of a required field
        if not field.required:
            del container[key]
        elif (value := _empty(field.type)) is not _MISSING:
            container[key] = value
        else:
            return False
        self._forget(path)
        return True

    def _forget(self, path: tuple, dropped: int | None = None) -> None:
        """Keep the pending unknown-variant swaps in step with a removal at `path`."""
        n = len(path)
        for p in list(self.unknowns):
            if p[:n] != path:
                continue
            value = self.unknowns.pop(p)
            if dropped is not None and len(p) > n and p[n] != dropped:
                self.unknowns[(*path, p[n] - (p[n] > dropped), *p[n + 1 :])] = value


def _assign(obj: Any, path: tuple, value: Any) -> None:
    for step in path[:-1]:
        obj = _child(obj, step)
    last = path[-1]
    if isinstance(obj, msgspec.Struct):
        setattr(obj, _fields(type(obj))[last].name, value)
    else:
        obj[last] = value


def _child(obj: Any, step: Any) -> Any:
    if isinstance(obj, msgspec.Struct):
        return getattr(obj, _fields(type(obj))[step].name)
    return obj[step]
