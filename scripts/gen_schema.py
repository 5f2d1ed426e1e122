"""Generate agentao's ACP wire types and method table from the official JSON schemas.

    python scripts/gen_schema.py                 # rewrite src/agentao/protocol/{schema,methods}.py
                                                 # and src/agentao/protocol/v2/{schema,methods}.py
    python scripts/gen_schema.py --out-dir DIR   # write them into DIR (and DIR/v2) instead (the
                                                 # drift test)
    python scripts/gen_schema.py --version 2     # only one protocol version's pair

Each protocol version is generated from its own pair of schemas (`spec/acp-schema.v{N}.json` and
`.v{N}.unstable.json`) by the same code; only the file header, the "not in the stable vN schema"
notes and the module the method table imports differ. v2's method table reuses v1's `MethodSpec`,
so a connection reads either table the same way.

Theory of operation: every `$def` of the *unstable* schema is classified once (`_Model`) into
a struct, a type alias, a natively tagged union (msgspec `tag_field`/`tag` variants) or a
"dispatched" union (a runtime base class that `agentao.protocol.decode` resolves, for unions
msgspec cannot express: untagged or open variants). Emission is a topological walk in schema
order, so the output only changes when the schema does. The code is emitted already formatted
(ruff/black style, 100 columns); no formatter runs, so the output does not depend on its version.
"""

from __future__ import annotations

import argparse
import json
import keyword
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "src/agentao/protocol"
VERSIONS = (1, 2)
WIDTH = 100
META_TYPE = "dict[str, Any] | None"
# Names the preamble defines; a variant may not take them.
RESERVED = {"Any", "DispatchedUnion", "UnknownVariant", "UnionDispatch", "Lenience"}
RESERVED |= {"Int32", "Int64", "Uint16", "Uint32", "Uint64"}
INT_FORMATS = {
    "int32": ("Int32", -(2**31), 2**31 - 1),
    "int64": ("Int64", -(2**63), 2**63 - 1),
    "uint16": ("Uint16", 0, 2**16 - 1),
    "uint32": ("Uint32", 0, 2**32 - 1),
    "uint64": ("Uint64", 0, None),  # msgspec bounds must fit an int64; uint64 is its own ceiling
}
LENIENT_KEYS = {
    "x-deserialize-default-on-error": "on_error",
    "x-deserialize-skip-invalid-items": "skip_items",
    "x-deserialize-default-on-null": "on_null",
}


# ---------------------------------------------------------------------------------------------
# Model


@dataclass
class Field:
    wire: str
    attr: str
    type: str
    default: str | None  # source after "= ", None when required
    flags: set[str]
    unstable: bool = False


@dataclass
class Item:
    """One top-level statement of schema.py."""

    name: str
    kind: str  # "class" | "alias" | "marker"
    doc: str = ""
    bases: list[str] = field(default_factory=list)
    fields: list[Field] = field(default_factory=list)
    tag_field: str | None = None
    tag: str | None = None
    expr: list[str] = field(default_factory=list)  # alias: union members
    literal: list[str] = field(default_factory=list)  # alias: Literal values (repr'd)
    deps: set[str] = field(default_factory=set)


@dataclass
class Dispatch:
    marker: str
    tag_field: str | None
    tagged: list[tuple[str, str]]
    untagged: list[str]
    open: bool


def camel(text: str) -> str:
    """`agent_message_chunk` -> `AgentMessageChunk`, `Session` -> `Session`."""
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[^0-9A-Za-z]+", text) if p)


def snake(wire: str) -> str:
    """`sessionId` -> `session_id`, `_meta` -> `meta`."""
    name = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", wire.lstrip("_")).lower()
    return name + "_" if keyword.iskeyword(name) else name


def msgspec_camel(attr: str) -> str:
    """What msgspec's `rename="camel"` makes of an attribute name."""
    first, *rest = attr.split("_")
    return first + "".join(p[:1].upper() + p[1:] for p in rest)


def first_paragraph(desc: str | None) -> str:
    """The summary paragraph (the schema's `**UNSTABLE**` banner is not one)."""
    paras = [p.strip() for p in (desc or "").strip().split("\n\n")]
    paras = [p for p in paras if p != "**UNSTABLE**"]
    return paras[0] if paras else ""


def ref_name(schema: dict) -> str | None:
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[1]
    subs = schema.get("allOf", [])
    if len(subs) == 1 and "$ref" in subs[0]:
        return ref_name(subs[0])
    return None


class _Model:
    def __init__(self, stable: dict, unstable: dict, version: int = 1):
        self.version = version
        self.stable = stable["$defs"]
        self.defs = unstable["$defs"]
        self.items: dict[str, Item] = {}
        self.order: dict[str, list[str]] = {}  # $def -> the item names it yields, in order
        self.dispatch: list[Dispatch] = []
        self.skipped: list[str] = []
        self.renamed: list[tuple[str, str, str]] = []  # (union, tag, class) for collisions
        self.variant_names = self._name_variants()
        self.mixins: list[tuple[str, str]] = []  # (struct, marker) applied once all exist
        for name, schema in self.defs.items():
            self._classify(name, schema)
        for struct, marker in self.mixins:
            self.items[struct].bases.append(marker)
            self.items[struct].deps.add(marker)

    # -- naming ---------------------------------------------------------------------------

    def _union_variants(self, name: str, schema: dict) -> list[tuple[str, str]] | None:
        """(key, label) for each variant that becomes a class of its own, else None."""
        kind = self._union_kind(schema)
        if kind not in ("tagged", "dispatched"):
            return None
        out = []
        for i, v in enumerate(schema.get("oneOf") or schema.get("anyOf")):
            tag = self._const(v)
            if v.get("title") == "other" or (tag is None and self._tag_field(schema) is None):
                continue
            out.append((f"{name}#{i}", tag[1] if tag else v["title"]))
        return out

    def _name_variants(self) -> dict[str, str]:
        """Variant class = CamelCase(title or tag), e.g. `AgentMessageChunk`. A one-word name
        (`Text`, `Http`: too vague at module level), a `$def`'s name or one two unions want
        takes the union's name as suffix (`TextContentBlock`, `ToolCallSessionUpdate`), and
        "Variant" after that if still taken. Order-independent, so deterministic."""
        labels = {}
        for name, schema in self.defs.items():
            for key, label in self._union_variants(name, schema) or []:
                labels[key] = (name, label)
        taken = set(self.defs) | RESERVED
        names = {key: camel(label) for key, (_, label) in labels.items()}
        for level in (1, 2):
            counts: dict[str, int] = {}
            for n in names.values():
                counts[n] = counts.get(n, 0) + 1
            clash = [
                k
                for k, n in names.items()
                if n in taken
                or counts[n] > 1
                or (level == 1 and re.fullmatch(r"[A-Z][a-z0-9]*", n))
            ]
            for key in clash:
                union, label = labels[key]
                names[key] = camel(label) + union + ("Variant" if level == 2 else "")
        for key, n in names.items():
            union, label = labels[key]
            if n != camel(label):
                self.renamed.append((union, label, n))
            assert n not in taken, n
        return names

    # -- classification -------------------------------------------------------------------

    @staticmethod
    def _const(variant: dict) -> tuple[str, object] | None:
        consts = [(k, p["const"]) for k, p in variant.get("properties", {}).items() if "const" in p]
        return consts[0] if len(consts) == 1 else None

    def _tag_field(self, schema: dict) -> str | None:
        fields = {c[0] for v in schema.get("oneOf") or schema.get("anyOf") if (c := self._const(v))}
        return fields.pop() if len(fields) == 1 else None

    def _union_kind(self, schema: dict) -> str | None:
        """How an any/oneOf becomes Python; None when the schema is not a union."""
        variants = schema.get("oneOf") or schema.get("anyOf")
        if not variants or schema.get("x-docs-ignore"):
            return None
        kinds = {v.get("type") for v in variants}
        if kinds <= {"string", "integer"} and all(
            "const" in v or v.get("title") in ("other", "Other") for v in variants
        ):
            return "enum"  # Literal[...] (| str when open), or int for ErrorCode
        if None not in kinds and "object" not in kinds:
            return "array" if kinds == {"array"} else "scalar"
        if len(variants) == 1 and ref_name(variants[0]):
            return "single"  # an alias of the one variant
        tag = self._tag_field(schema)
        all_tagged = tag is not None and all(self._const(v) for v in variants)
        if "properties" in schema:  # own fields plus variants
            return "tagged" if all_tagged and "discriminator" in schema else "flatten"
        if all_tagged:
            return "tagged"
        if tag is None and not all(ref_name(v) for v in variants):
            return "flatten"  # inline untagged objects, e.g. MessageMcpResponse result | error
        return "dispatched"

    def _add(self, owner: str, item: Item) -> None:
        assert item.name not in self.items, item.name
        self.items[item.name] = item
        self.order.setdefault(owner, []).append(item.name)

    def _doc(self, name: str, schema: dict) -> str:
        doc = first_paragraph(schema.get("description"))
        if name not in self.stable:
            doc += f"\n\nUnstable: not in the stable v{self.version} schema."
        return doc.strip()

    def _classify(self, name: str, schema: dict) -> None:
        doc = self._doc(name, schema)
        kind = self._union_kind(schema)
        if schema.get("x-docs-ignore"):
            self.skipped.append(name)
        elif kind == "enum":
            self._enum(name, schema, doc)
        elif kind in ("scalar", "array"):
            self._scalar_union(name, schema, doc, kind)
        elif kind == "tagged":
            self._tagged(name, schema, doc)
        elif kind == "single":
            ref = ref_name((schema.get("oneOf") or schema["anyOf"])[0])
            self._add(name, Item(name, "alias", doc, expr=[ref], deps={ref}))
        elif kind == "dispatched":
            self._dispatched(name, schema, doc)
        elif kind == "flatten" or schema.get("type") == "object":
            self._struct(name, schema, doc)
        elif set(schema) <= {"allOf", "x-method", "x-side", "description"} and ref_name(schema):
            base = ref_name(schema)
            self._add(name, Item(name, "class", doc, [base], deps={base}))
        elif not {k for k in schema if not k.startswith("x-") and k != "description"}:
            self._add(name, Item(name, "alias", doc, expr=["Any"]))
        else:
            expr = self.render(schema)
            self._add(name, Item(name, "alias", doc, expr=[expr], deps=self._names_in(expr)))

    def _enum(self, name: str, schema: dict, doc: str) -> None:
        variants = schema.get("oneOf") or schema.get("anyOf")
        values = [v["const"] for v in variants if "const" in v]
        is_open = len(values) < len(variants)
        if isinstance(values[0], int):  # ErrorCode: well-known codes, any int32 allowed
            known = ", ".join(f"{v['const']} {v['title']}" for v in variants if "const" in v)
            item = Item(
                name, "alias", f"{doc}\n\nKnown: {known}.", expr=[self.render(variants[-1])]
            )
        else:
            item = Item(name, "alias", doc, literal=[json.dumps(v) for v in values])
            item.expr = ["str"] if is_open else []
        self._add(name, item)

    def _scalar_union(self, name: str, schema: dict, doc: str, kind: str) -> None:
        variants = schema.get("oneOf") or schema.get("anyOf")
        if kind == "array":  # list[A] | list[B]: a dispatched union per item
            marker = name + "Item"
            items = [ref_name(v["items"]) for v in variants]
            self._add(name, Item(marker, "marker", f"An item of `{name}`: {' | '.join(items)}."))
            self.dispatch.append(Dispatch(marker, None, [], items, False))
            self.mixins += [(ref, marker) for ref in items]
            self._add(name, Item(name, "alias", doc, expr=[f"list[{marker}]"], deps={marker}))
            return
        members = [self.render(v) for v in variants]
        self._add(name, Item(name, "alias", doc, expr=members, deps=self._names_in(*members)))

    def _variant_class(
        self,
        union: str,
        index: int,
        variant: dict,
        extra: list[Field],
        tag_field: str | None,
        markers: list[str],
    ) -> Item:
        cname = self.variant_names[f"{union}#{index}"]
        base = ref_name(variant)
        const = self._const(variant)
        doc = first_paragraph(variant.get("description")) or (
            first_paragraph(self.defs[base].get("description")) if base else ""
        )
        stable = self.stable.get(union, {})
        stable_tags = [self._const(v) for v in stable.get("oneOf") or stable.get("anyOf") or []]
        if (const and stable_tags and const not in stable_tags) or not stable:
            doc += f"\n\nUnstable: not in the stable v{self.version} schema."
        own = [f for f in self._fields(variant, None, deep=False) if f.wire != tag_field]
        if base and self._union_kind(self.defs[base]) in ("tagged", "dispatched"):
            # A variant that is itself a union (v2's `state_update` is a StateUpdate, tagged by
            # `state`): a class cannot carry two tags, so it is one flat struct of every inner
            # variant's properties, required only when all require them (`state: str`).
            inner = [f for f in self._fields(self.defs[base], None) if f.wire != tag_field]
            own, base = inner + own, None
        bases = ([base] if base else ["_Base"]) + markers
        item = Item(cname, "class", doc, bases, extra + own, deps=set(bases))
        if const:
            item.tag_field, item.tag = const[0], const[1]
        elif tag_field:  # untagged variant of a tagged union: keep the tag when a peer sends it
            title = json.dumps(variant["title"])
            item.fields.append(
                Field(tag_field, snake(tag_field), f"Literal[{title}] | None", "None", set())
            )
        return item

    def _tagged(self, name: str, schema: dict, doc: str) -> None:
        """A closed union msgspec dispatches by itself on a const tag property."""
        variants = schema.get("oneOf") or schema.get("anyOf")
        tag_field = self._tag_field(schema)
        common = self._fields(schema, self.stable.get(name), deep=False)
        common = [f for f in common if f.wire != tag_field]
        members = []
        for i, v in enumerate(variants):
            item = self._variant_class(name, i, v, list(common), tag_field, [])
            self._add(name, item)
            members.append(item.name)
        self._add(name, Item(name, "alias", doc, expr=members, deps=set(members)))

    def _dispatched(self, name: str, schema: dict, doc: str) -> None:
        """A union with untagged or open (`other`) variants: a runtime base class."""
        variants = schema.get("oneOf") or schema.get("anyOf")
        tag_field = self._tag_field(schema)
        disp = Dispatch(name, tag_field, [], [], False)
        self._add(name, Item(name, "marker", doc))
        for i, v in enumerate(variants):
            if v.get("title") == "other":
                disp.open = True
            elif tag_field is None:  # purely structural: the referenced structs themselves
                ref = ref_name(v)
                self.mixins.append((ref, name))
                disp.untagged.append(ref)
            else:
                item = self._variant_class(name, i, v, [], tag_field, [name])
                self._add(name, item)
                if item.tag is not None:
                    disp.tagged.append((item.tag, item.name))
                else:
                    disp.untagged.append(item.name)
        members = [t for _, t in disp.tagged] + disp.untagged
        self.items[name].doc += f"\n\nOne of: {', '.join(members)}" + (
            ", or `UnknownVariant` for any other tag (the schema's open `other` case)."
            if disp.open
            else "."
        )
        self.dispatch.append(disp)

    def _struct(self, name: str, schema: dict, doc: str) -> None:
        fields = self._fields(schema, self.stable.get(name))
        self._add(name, Item(name, "class", doc, ["_Base"], fields, deps={"_Base"}))

    # -- fields ---------------------------------------------------------------------------

    def _collect(self, schema: dict) -> tuple[dict[str, list[dict]], set[str], set[str]]:
        """Properties (own, allOf, then any/oneOf variants), required names, and the names
        declared directly (own or allOf) rather than only by some variants."""
        props: dict[str, list[dict]] = {}
        required = set(schema.get("required", []))
        for key, prop in schema.get("properties", {}).items():
            props.setdefault(key, []).append(prop)
        for sub in schema.get("allOf", []):
            sub_props, sub_req, _ = self._collect(
                self.defs[ref_name(sub)] if ref_name(sub) else sub
            )
            for key, ps in sub_props.items():
                props.setdefault(key, []).extend(ps)
            required |= sub_req
        direct = set(props)
        variants = schema.get("anyOf") or schema.get("oneOf") or []
        if variants:
            results = [self._collect(v) for v in variants]
            for sub_props, _, _ in results:
                for key, ps in sub_props.items():
                    props.setdefault(key, []).extend(ps)
            required |= set.intersection(*(r for _, r, _ in results))
        return props, required, direct

    def _fields(self, schema: dict, stable: dict | None, deep: bool = True) -> list[Field]:
        """Fields of an object schema; `deep=False` takes its own `properties` only."""
        if not deep:
            schema = {k: schema[k] for k in ("properties", "required") if k in schema}
        props, required, direct = self._collect(schema)
        stable_props = self._collect(stable)[0] if stable else None
        fields = []
        for wire, schemas in props.items():
            typ = self.render(schemas[0]) if wire in direct else self._merge(schemas)
            flags = {LENIENT_KEYS[k] for s in schemas for k in LENIENT_KEYS if s.get(k)}
            if wire in required:
                default = None
            else:
                typ, default = self._optional(typ, schemas[0])
            unstable = stable_props is not None and wire not in stable_props
            fields.append(Field(wire, snake(wire), typ, default, flags, unstable))
        return sorted(fields, key=lambda f: f.wire == "_meta")  # `_meta` last, else schema order

    def _merge(self, schemas: list[dict]) -> str:
        """One property declared by several variants: consts of a tag, or a union."""
        if all("const" in s for s in schemas):
            return f"Literal[{', '.join(json.dumps(s['const']) for s in schemas)}]"
        parts = []
        for s in schemas:
            part = "str" if "const" in s and s.get("type") == "string" else self.render(s)
            parts += [p for p in part.split(" | ") if p not in parts]
        return self._union(parts)

    def _optional(self, typ: str, schema: dict) -> tuple[str, str]:
        if "default" not in schema:
            return (typ if self._nullable(typ) else f"{typ} | None"), "None"
        value = schema["default"]
        if value == [] or (value == {} and typ.startswith("dict[")):
            return typ, json.dumps(value)
        if isinstance(value, dict):
            ref = ref_name(schema)
            assert ref and self._default_is_empty(ref, value), (typ, value)
            return typ, f"msgspec.field(default_factory={ref})"
        assert isinstance(value, (bool, int, str)), value
        return typ, json.dumps(value) if isinstance(value, str) else repr(value)

    def _nullable(self, typ: str) -> bool:
        for part in typ.split(" | "):
            variants = self.defs.get(part, {}).get("anyOf", [])
            if part in ("None", "Any") or any(v.get("type") == "null" for v in variants):
                return True
        return False

    def _default_is_empty(self, ref: str, value: dict) -> bool:
        """True when a schema default object is what the struct's own defaults produce."""
        props = self.defs[ref].get("properties", {})
        for key, v in value.items():
            prop = props[key]
            if isinstance(v, dict):
                if not (ref_name(prop) and self._default_is_empty(ref_name(prop), v)):
                    return False
            elif prop.get("default") != v:
                return False
        return True

    # -- types ----------------------------------------------------------------------------

    @staticmethod
    def _union(parts: list[str]) -> str:
        if "None" in parts:
            parts = [p for p in parts if p != "None"] + ["None"]
        return " | ".join(parts)

    def render(self, s: dict) -> str:
        """The Python annotation for a property schema."""
        ref = ref_name(s)
        if ref:
            return ref
        for key in ("anyOf", "oneOf"):
            if key in s:
                parts: list[str] = []
                for v in s[key]:
                    parts += [p for p in self.render(v).split(" | ") if p not in parts]
                return self._union(parts)
        typ = s.get("type")
        if isinstance(typ, list):
            parts = [self.render({**s, "type": t}) for t in typ if t != "null"]
            return self._union(parts + (["None"] if "null" in typ else []))
        if typ == "null":
            return "None"
        if typ == "string":
            meta = {k: s[k] for k in ("minLength", "maxLength", "pattern") if k in s}
            if not meta:
                return "str"
            args = ", ".join(f"{snake(k)}={v!r}" for k, v in meta.items())
            return f"Annotated[str, msgspec.Meta({args})]"
        if typ == "integer":
            return self._int(s)
        if typ == "number":
            return "float"
        if typ == "boolean":
            return "bool"
        if typ == "array":
            return f"list[{self.render(s.get('items', {}))}]"
        if typ == "object":
            extra = s.get("additionalProperties", True)
            return "dict[str, Any]" if extra is True else f"dict[str, {self.render(extra)}]"
        assert typ is None, s
        return "Any"

    @staticmethod
    def _int(s: dict) -> str:
        alias, lo, hi = INT_FORMATS.get(s.get("format"), ("int", None, None))
        lo2, hi2 = s.get("minimum", lo), s.get("maximum", hi)
        if (lo2, hi2) == (lo, hi):
            return alias
        args = ", ".join(f"{k}={v}" for k, v in (("ge", lo2), ("le", hi2)) if v is not None)
        return f"Annotated[int, msgspec.Meta({args})]"

    def _names_in(self, *exprs: str) -> set[str]:
        return {w for e in exprs for w in re.findall(r"[A-Za-z_]\w*", e)} & set(self.defs)


# ---------------------------------------------------------------------------------------------
# Stable vs unstable: the unstable schema must only widen the stable one.


def _widens(old: object, new: object) -> bool:
    """A default may only gain keys (for a property the stable schema does not have)."""
    if isinstance(old, dict) and isinstance(new, dict):
        return all(k in new and _widens(v, new[k]) for k, v in old.items())
    return old == new


def check_superset(stable: dict, unstable: dict) -> None:
    """Fail if any stable $def is narrowed by the unstable schema we generate from."""

    def clean(s):
        if isinstance(s, dict):
            # An open `other` variant excludes the known tags (v2's `not`): the unstable
            # schema knowing more tags widens the union, so that list is not compared.
            drop = {"description", "default"} | ({"not"} if s.get("title") == "other" else set())
            return {k: clean(v) for k, v in s.items() if k not in drop}
        return [clean(v) for v in s] if isinstance(s, list) else s

    problems = []
    for name, s in stable["$defs"].items():
        u = unstable["$defs"].get(name)
        if u is None:
            problems.append(f"{name}: missing")
            continue
        if s.get("x-docs-ignore"):  # JSON-RPC envelopes: not generated, methods checked below
            continue
        if set(s.get("required", [])) != set(u.get("required", [])):
            problems.append(f"{name}: required differs")
        for key, prop in s.get("properties", {}).items():
            new = u.get("properties", {}).get(key, {})
            if clean(prop) != clean(new) or not _widens(prop.get("default"), new.get("default")):
                problems.append(f"{name}.{key}: changed")
        for key in ("anyOf", "oneOf"):
            old = [json.dumps(clean(v), sort_keys=True) for v in s.get(key, [])]
            new = {json.dumps(clean(v), sort_keys=True) for v in u.get(key, [])}
            problems += [f"{name}.{key}: variant dropped" for v in old if v not in new]
        skip = ("properties", "required", "anyOf", "oneOf")
        if clean({k: v for k, v in s.items() if k not in skip}) != clean(
            {k: v for k, v in u.items() if k not in skip}
        ):
            problems.append(f"{name}: shape differs")
    for name, s in stable["$defs"].items():
        if "x-method" in s and (s["x-method"], s["x-side"]) != (
            unstable["$defs"][name].get("x-method"),
            unstable["$defs"][name].get("x-side"),
        ):
            problems.append(f"{name}: method or side differs")
    if problems:
        sys.exit("unstable schema narrows stable types:\n  " + "\n  ".join(problems))


# ---------------------------------------------------------------------------------------------
# Emission (already formatted: black/ruff style at 100 columns)


# A node of emitted code is an atom (str) or (head, items, tail), e.g. ("f(", ["a", "b"], ")").


def flat(node) -> str:
    if isinstance(node, str):
        return node
    head, items, tail = node
    return head + ", ".join(flat(i) for i in items) + tail


def wrap(head: str, items: list, tail: str, indent: str = "") -> list[str]:
    """Black's bracket split: one line; else the items on one indented line; else one item
    per line (each split the same way when still too long) with a trailing comma."""
    one = indent + flat((head, items, tail))
    if len(one) <= WIDTH:
        return [one]
    inner = indent + "    " + ", ".join(flat(i) for i in items)
    if len(inner) <= WIDTH:
        return [indent + head, inner, indent + tail]
    lines = [indent + head]
    for i in items:
        if isinstance(i, str) or len(indent + "    " + flat(i) + ",") <= WIDTH:
            lines.append(f"{indent}    {flat(i)},")
        else:
            lines += wrap(i[0], i[1], i[2] + ",", indent + "    ")
    return [*lines, indent + tail]


def wrap_union(name: str, parts: list[str]) -> list[str]:
    one = f"{name} = {' | '.join(parts)}"
    if len(one) <= WIDTH:
        return [one]
    inner = "    " + " | ".join(parts)
    if len(inner) <= WIDTH:
        return [f"{name} = (", inner, ")"]
    return [f"{name} = (", "    " + parts[0]] + [f"    | {p}" for p in parts[1:]] + [")"]


def docstring(text: str, indent: str) -> list[str]:
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"').strip()
    if not text:
        return []
    lines = [ln.rstrip() for ln in text.split("\n")]
    if len(lines) == 1:
        end = " " if lines[0].endswith('"') else ""
        return [f'{indent}"""{lines[0]}{end}"""']
    body = [f"{indent}{ln.strip()}" if ln.strip() else "" for ln in lines[1:]]
    return [f'{indent}"""{lines[0]}', *body, f'{indent}"""']


def comment(text: str) -> list[str]:
    return [f"# {ln.rstrip()}".rstrip() for ln in text.split("\n")]


class _Emitter:
    def __init__(self, model: _Model):
        self.m = model
        self.done: set[str] = set()
        self.out: list[str] = []

    def emit_all(self) -> list[str]:
        for _owner, names in self.m.order.items():
            for name in names:
                self._emit(name)
        return self.out

    def _emit(self, name: str) -> None:
        if name in self.done or name not in self.m.items:
            return
        self.done.add(name)
        item = self.m.items[name]
        deps = item.deps | self.m._names_in(*(f.default or "" for f in item.fields))
        for dep in sorted(deps - self.done):  # eager deps (bases, aliases, factories) first
            self._emit(dep)
        self.out += ["", "", *getattr(self, "_" + item.kind)(item)]

    def _alias(self, item: Item) -> list[str]:
        lines = comment(item.doc) if item.doc else []
        if item.literal:
            lit = wrap(f"{item.name} = Literal[", list(item.literal), "]")
            if not item.expr:
                return lines + lit
            parts = [f"Literal[{', '.join(item.literal)}]", *item.expr]
            return lines + wrap_union(item.name, parts)
        return lines + wrap_union(item.name, item.expr)

    def _marker(self, item: Item) -> list[str]:
        doc = "\n".join(_rewrap(ln) for ln in item.doc.split("\n"))
        return [
            f"class {item.name}(DispatchedUnion):",
            *docstring(doc, "    "),
            "",
            "    __slots__ = ()",
        ]

    def _class(self, item: Item) -> list[str]:
        args = [*item.bases, "kw_only=True"]  # msgspec's kw_only is not inherited
        if item.name in WRITE_NULLS:
            args.append("omit_defaults=False")
        if item.tag_field:
            args += [f"tag_field={json.dumps(item.tag_field)}", f"tag={json.dumps(item.tag)}"]
        lines = wrap(f"class {item.name}(", args, "):")
        doc = docstring(item.doc, "    ")
        lines += doc
        if item.fields:
            lines += [""] if doc else []
            for f in item.fields:
                lines += self._field(f)
        elif not doc:
            lines.append("    pass")
        return lines

    def _field(self, f: Field) -> list[str]:
        pre = [f"    # unstable: not in the stable v{self.m.version} schema"] if f.unstable else []
        if msgspec_camel(f.attr) != f.wire:
            kw = (
                [f"name={json.dumps(f.wire)}"]
                if f.default is None
                else [f"default={f.default}", f"name={json.dumps(f.wire)}"]
            )
            if f.default and f.default.startswith("msgspec.field("):
                kw = [f.default[len("msgspec.field(") : -1], f"name={json.dumps(f.wire)}"]
            return pre + wrap(f"    {f.attr}: {f.type} = msgspec.field(", kw, ")")
        tail = "" if f.default is None else f" = {f.default}"
        return [*pre, f"    {f.attr}: {f.type}{tail}"]

    def tables(self) -> list[str]:
        m = self.m
        out = [
            "",
            "",
            "# Unions msgspec cannot dispatch by itself; agentao.protocol.decode resolves them.",
            "UNION_DISPATCH: dict[type, UnionDispatch] = {",
        ]
        for d in m.dispatch:
            tagged = ("{", [f"{json.dumps(t)}: {c}" for t, c in d.tagged], "}")
            untagged = (
                f"({d.untagged[0]},)" if len(d.untagged) == 1 else ("(", list(d.untagged), ")")
            )
            args = [
                json.dumps(d.tag_field) if d.tag_field else "None",
                tagged,
                untagged,
                str(d.open),
            ]
            out += wrap(f"{d.marker}: UnionDispatch(", args, "),", "    ")
        out += [
            "}",
            "",
            "# Wire names of the fields each struct decodes leniently (decode_lenient):",
            "# on_error, skip_items, on_null, as space-separated names.",
            "LENIENT_FIELDS: dict[type, Lenience] = {",
        ]
        for name, item in m.items.items():
            fields = self._all_fields(item)
            if item.kind != "class" or not any(f.flags for f in fields):
                continue
            sets = [
                " ".join(sorted({f.wire for f in fields if flag in f.flags}))
                for flag in ("on_error", "skip_items", "on_null")
            ]
            while sets and not sets[-1]:
                sets.pop()
            out += wrap(f"{name}: _lenient(", [json.dumps(x) for x in sets], "),", "    ")
        out.append("}")
        return out

    def _all_fields(self, item: Item) -> list[Field]:
        fields = []
        for base in item.bases:
            if base in self.m.items and self.m.items[base].kind == "class":
                fields += self._all_fields(self.m.items[base])
        return fields + item.fields


HEADER = (
    "# generated by scripts/gen_schema.py from spec/acp-schema.v{v}.unstable.json (checked against\n"
    "# spec/acp-schema.v{v}.json) — do not edit. Regenerate: python scripts/gen_schema.py"
)

SCHEMA_DOC = '''"""ACP wire types: one msgspec Struct per object `$def` of the official schema.

Source: the *unstable* schema, a superset of the stable one (the generator fails if any stable
type is narrowed: a property, required set, variant or shape changed), so unstable methods such
as session/fork get types too. Names and fields that only the unstable schema has say so in a
docstring line or a `# unstable` comment; `methods.MethodSpec.stable` tells methods apart.

Conventions
- Class name = `$defs` key. Attributes are snake_case; the wire name is the camelCase one
  (`_Base` renames to camel; `_meta` is attribute `meta`). Unknown fields are ignored on decode.
- Optional fields default to None (or the schema's scalar/empty default; an object default
  becomes `default_factory` of its struct, checked equal). Defaults are omitted on encode, so
  an explicit `null` or default value in an optional field is not written back.
- String enums are `Literal[...]`; open ones (with an `other` case) `Literal[...] | str`.
  Integers carry bounds: Uint16/Uint32/Uint64/Int32/Int64. A bool is never an int.
- Tagged unions (oneOf on a const property) are msgspec tagged unions: one subclass per
  variant, inheriting the referenced struct, e.g. `AgentMessageChunk(ContentChunk,
  tag_field="sessionUpdate", tag="agent_message_chunk")`, and an alias `SessionUpdate = ...`.
  Variant name: CamelCase of its title or tag; a one-word name, or one taken by a `$def` or by
  two unions, gets the union's name as suffix (`TextContentBlock`, `ToolCallSessionUpdate`;
  plus "Variant" if still taken). Suffixed: {renamed}.
- Unions msgspec cannot dispatch (a variant without tag, e.g. McpServer's stdio, or an open
  `other` case) are a `DispatchedUnion` subclass that every variant inherits; decode.py picks
  the variant (tag value, else the untagged variant, else by required keys) and
  `UnknownVariant` keeps an `other` value verbatim. Untagged variants of a tagged union keep
  an optional tag field so `{{"type": "stdio", ...}}` and `{{...}}` both re-encode as received.
  Decode these types through agentao.protocol.decode, not bare `msgspec.convert`.
- An object with its own properties plus an untagged any/oneOf (e.g.
  SetSessionConfigOptionRequest, CreateElicitationRequest) is one flat struct: every variant's
  properties, required only when all variants require them.
- Not generated (JSON-RPC envelopes, framing's job): {skipped}.
"""'''

# Structs whose unset optional fields are written as null rather than omitted, because a
# peer reads the null: a diff's `oldText: null` says "this edit created the file".
WRITE_NULLS = frozenset({"Diff"})

# Every version's integer bounds and struct base (each module has its own `_Base`).
BOUNDS_AND_BASE = '''
Int32 = Annotated[int, msgspec.Meta(ge=-2147483648, le=2147483647)]
Int64 = Annotated[int, msgspec.Meta(ge=-9223372036854775808, le=9223372036854775807)]
Uint16 = Annotated[int, msgspec.Meta(ge=0, le=65535)]
Uint32 = Annotated[int, msgspec.Meta(ge=0, le=4294967295)]
Uint64 = Annotated[int, msgspec.Meta(ge=0)]


class _Base(
    msgspec.Struct,
    omit_defaults=True,
    forbid_unknown_fields=False,
    rename="camel",
    repr_omit_defaults=True,
):
    """Configuration shared by every generated struct."""
'''

PREAMBLE = (
    """
from __future__ import annotations

from typing import Annotated, Any, Literal, NamedTuple

import msgspec
"""
    + BOUNDS_AND_BASE
    + '''

class DispatchedUnion:
    """Base of a union that agentao.protocol.decode dispatches (see the module docstring)."""

    __slots__ = ()


class UnknownVariant:
    """A union value this schema has no class for, kept verbatim in `raw`.

    Decoded from a dispatched union's open `other` case, or by `decode_lenient` from a tag a
    newer peer added. agentao.protocol.decode.encode writes `raw` back unchanged.
    """

    __slots__ = ("raw", "tag_field")

    def __init__(self, raw: dict[str, Any], tag_field: str | None = None) -> None:
        self.raw = raw
        self.tag_field = tag_field

    @property
    def tag(self) -> Any:
        return self.raw.get(self.tag_field) if self.tag_field else None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UnknownVariant) and (self.raw, self.tag_field) == (
            other.raw,
            other.tag_field,
        )

    __hash__ = None  # compared by value, like the dict it holds

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.raw!r})"


class UnionDispatch(NamedTuple):
    """How to pick the variant of a DispatchedUnion from a wire object."""

    tag_field: str | None
    tagged: dict[str, type]  # tag value -> variant
    untagged: tuple[type, ...]  # tag absent (or equal to the variant's title)
    open: bool  # any other tag value -> UnknownVariant


class Lenience(NamedTuple):
    """Wire names of a struct's fields marked by the schema's x-deserialize-* keys."""

    on_error: frozenset[str]  # x-deserialize-default-on-error: invalid -> default
    skip_items: frozenset[str]  # x-deserialize-skip-invalid-items: drop invalid items
    on_null: frozenset[str]  # x-deserialize-default-on-null: null -> default


def _lenient(on_error: str, skip_items: str = "", on_null: str = "") -> Lenience:
    return Lenience(*(frozenset(names.split()) for names in (on_error, skip_items, on_null)))
'''
)

# Later versions share v1's runtime helpers, so decode.py dispatches, repairs and re-encodes
# every version's unions with one set of classes (an UnknownVariant is one class, whichever
# version read it). Only the structs' base and the integer bounds are their own.
PREAMBLE_LATER = (
    """
from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from agentao.protocol.schema import DispatchedUnion, Lenience, UnionDispatch, UnknownVariant
"""
    + BOUNDS_AND_BASE
    + """

def _lenient(on_error: str, skip_items: str = "", on_null: str = "") -> Lenience:
    return Lenience(*(frozenset(names.split()) for names in (on_error, skip_items, on_null)))
"""
)


def render_schema(model: _Model) -> str:
    emitter = _Emitter(model)
    body = emitter.emit_all() + emitter.tables()
    renamed = ", ".join(f"{u}.{t} -> {c}" for u, t, c in model.renamed)
    doc = SCHEMA_DOC.format(renamed=renamed, skipped=", ".join(model.skipped))
    doc = "\n".join(_rewrap(ln) for ln in doc.split("\n"))
    names = [*model.items, "DispatchedUnion", "Lenience", "UnionDispatch", "UnknownVariant"]
    names += ["LENIENT_FIELDS", "UNION_DISPATCH", "Int32", "Int64", "Uint16", "Uint32", "Uint64"]
    ordered = sorted(names, key=lambda n: (not n.isupper(), not n[:1].isupper(), n))  # isort
    tail = ["", "__all__ = [", *(f"    {json.dumps(n)}," for n in ordered), "]"]
    preamble = PREAMBLE if model.version == 1 else PREAMBLE_LATER
    return (
        "\n".join([HEADER.format(v=model.version), doc, preamble.rstrip("\n"), *body, *tail]) + "\n"
    )


def _rewrap(line: str) -> str:
    """Wrap a long docstring line (the renamed/skipped lists) at the width, indented as it is."""
    if len(line) <= WIDTH:
        return line
    indent = " " * (len(line) - len(line.lstrip()))
    cont = indent + ("  " if line.lstrip().startswith("- ") else "")
    out, cur = [], ""
    for word in line.strip().split(" "):
        if cur and len(indent) + len(cur) + 1 + len(word) > WIDTH:
            out.append(cur)
            cur = word
        else:
            cur = f"{cur} {word}" if cur else word
    out.append(cur)
    return "\n".join([indent + out[0]] + [cont + w for w in out[1:]])


# ---------------------------------------------------------------------------------------------
# methods.py


def method_rows(model: _Model) -> list[tuple]:
    """(method, side, kind, params, result, stable) for every x-method request/notification."""
    defs, rows = model.defs, []
    responses = {
        (d["x-method"], d["x-side"]): n
        for n, d in defs.items()
        if "x-method" in d and n.endswith("Response")
    }
    for name, d in defs.items():
        if "x-method" not in d or name.endswith("Response"):
            continue
        kind = "notification" if name.endswith("Notification") else "request"
        assert kind == "notification" or name.endswith("Request"), name
        key = (d["x-method"], d["x-side"])
        result = responses.pop(key) if kind == "request" else None
        stable = model.stable.get(name, {}).get("x-method") == d["x-method"]
        rows.append((d["x-method"], d["x-side"], kind, name, result, stable))
    assert not responses, responses
    return sorted(rows, key=lambda r: (r[0], r[1], r[2]))


def python_name(method: str) -> str:
    """`session/set_mode` -> `session_set_mode`, `$/cancel_request` -> `cancel_request`."""
    return re.sub(r"[^0-9A-Za-z_]+", "_", method).strip("_")


METHODS_DOC = '''"""The ACP method table: wire name -> params/result types, handling side, kind.

`side` is the schema's `x-side`: who *handles* the method ("agent", "client", "protocol" for
`$/` methods either side handles, "proxy"). `python_name` is the handler method name.

A name may occur more than once: `mcp/message` is a request the client handles and a
notification the agent handles; `proxy/successor` is a request and a notification. `METHODS`
holds one spec per name (the request when there are several); `METHOD_SPECS` holds all, and
`find_method(method, side, kind)` looks one up exactly.
"""'''

METHODS_PRE = '''
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from agentao.protocol import schema

Side = Literal["agent", "client", "protocol", "proxy"]
Kind = Literal["request", "notification"]


@dataclass(frozen=True, slots=True)
class MethodSpec:
    """One ACP method: its wire name, types and which side handles it."""

    method: str
    params: type | None
    result: Any  # a type, or None for a notification (typing.Any for an untyped result)
    side: Side
    kind: Kind
    stable: bool  # present in the stable v1 schema
    python_name: str
'''

# v2's table: the same MethodSpec (one shape for every version), its own schema module.
METHODS_PRE_V2 = """
from __future__ import annotations

from agentao.protocol.methods import Kind, MethodSpec, Side
from agentao.protocol.v2 import schema
"""

METHODS_POST = '''

METHODS: dict[str, MethodSpec] = {}
for _spec in METHOD_SPECS:  # a request wins over a notification of the same name
    if _spec.method not in METHODS or _spec.kind == "request":
        METHODS[_spec.method] = _spec
_BY_KEY = {(s.method, s.side, s.kind): s for s in METHOD_SPECS}


def find_method(method: str, side: Side, kind: Kind) -> MethodSpec | None:
    """The spec of `method` as handled by `side`, or None when the schema has none."""
    return _BY_KEY.get((method, side, kind))


__all__ = ["METHODS", "METHOD_SPECS", "Kind", "MethodSpec", "Side", "find_method"]
'''


def render_methods(model: _Model) -> str:
    # isort's spacing: two blank lines after v1's class, one after v2's imports
    gap = ["", ""] if model.version == 1 else [""]
    lines = [*gap, "METHOD_SPECS: tuple[MethodSpec, ...] = ("]
    for method, side, kind, params, result, stable in method_rows(model):
        args = [
            f"method={json.dumps(method)}",
            f"params=schema.{params}",
            f"result=schema.{result}" if result else "result=None",
            f"side={json.dumps(side)}",
            f"kind={json.dumps(kind)}",
            f"stable={stable}",
            f"python_name={json.dumps(python_name(method))}",
        ]
        lines += wrap("MethodSpec(", args, "),", "    ")
    lines.append(")")
    return (
        "\n".join(
            [
                HEADER.format(v=model.version),
                METHODS_DOC,
                (METHODS_PRE if model.version == 1 else METHODS_PRE_V2).rstrip("\n"),
                *lines,
                METHODS_POST.rstrip("\n"),
            ]
        )
        + "\n"
    )


# ---------------------------------------------------------------------------------------------


def generate(version: int = 1, root: Path = ROOT) -> dict[str, str]:
    """File name -> generated source, for one protocol version."""
    stable = json.loads((root / f"spec/acp-schema.v{version}.json").read_text(encoding="utf-8"))
    unstable_path = root / f"spec/acp-schema.v{version}.unstable.json"
    unstable = json.loads(unstable_path.read_text(encoding="utf-8"))
    check_superset(stable, unstable)
    model = _Model(stable, unstable, version)
    return {"schema.py": render_schema(model), "methods.py": render_methods(model)}


def version_dir(out_dir: Path, version: int) -> Path:
    """v1 lives in protocol/ itself (its names came first), every later version in protocol/vN/."""
    return out_dir if version == 1 else out_dir / f"v{version}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out-dir", type=Path, default=OUT_DIR)
    parser.add_argument("--version", type=int, choices=VERSIONS, action="append")
    args = parser.parse_args(argv)
    for version in args.version or VERSIONS:
        target = version_dir(args.out_dir, version)
        target.mkdir(parents=True, exist_ok=True)
        for name, text in generate(version).items():
            (target / name).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
