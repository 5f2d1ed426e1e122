"""A conversation's title, as a person reads it in a list: short, one line, never raw JSON.

Who titles a conversation (`Conversation.title_by`), strongest last:

    prompt   short_title() of its first prompt, when it starts
    agent    the agent's own title (`session_info_update`), after a turn that sent one
    person   a rename (or a remote v2 client's `session/set_title`), `person_title()`;
             neither of the others replaces it

A prompt's text may be a Chat Completions transcript rendered for the agent
(`transcript.render`: "[System]\\n…", "[Assistant]\\n…" parts, the newest user words
after them), or a JSON document a program sent. `short_title()` takes the newest
user words, and from JSON only its string values.
"""

from __future__ import annotations

import json
import re
from typing import Any

LABELS = ("[System]\n", "[Assistant]\n")  # what `transcript.render` puts before others' parts
TITLED_BY = ("prompt", "agent", "person")
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)(?:"|$)')  # the last one may be cut off
_SPACES = re.compile(r"\s+")


def person_title(value: str, limit: int) -> str:
    """A title a person gives (a rename, a remote client's `session/set_title`) as stored:
    one line, newlines and runs of spaces as one space; ValueError saying why when it is
    empty that way or longer than `limit`."""
    title = " ".join(value.split())
    if not title:
        raise ValueError("title must not be empty")
    if len(title) > limit:
        raise ValueError(f"title is longer than {limit} characters")
    return title


def short_title(text: str | None, limit: int) -> str:
    """At most `limit` characters of the newest user words in `text`, cut at a word
    ("" when there are none)."""
    if not text:
        return ""
    words = _newest_user_part(text)
    if words.lstrip().startswith(("{", "[")):
        words = _json_words(words)
    line = _SPACES.sub(" ", words).strip()
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    if line[limit - 1] != " " and " " in cut[limit // 2 :]:  # mid-word: back to its start
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,.;:") + "…"


def _newest_user_part(text: str) -> str:
    """The first part after the last labelled one (all of it when nothing is labelled)."""
    parts = text.split("\n\n")
    labelled = [i for i, p in enumerate(parts) if p.startswith(LABELS) or p in _BARE_LABELS]
    rest = parts[labelled[-1] + 1 :] if labelled else parts
    return next((p for p in rest if p.strip()), "")


_BARE_LABELS = frozenset(label.strip() for label in LABELS)


def _json_words(text: str) -> str:
    """The string values of a JSON document (or of a cut one): the longest that reads as
    words first."""
    try:
        found = list(_strings(json.loads(text)))
    except ValueError:
        found = [m.group(1) for m in _STRING.finditer(text)]
    phrases = [s for s in found if " " in s.strip()]
    return max(phrases, key=len) if phrases else (found[0] if found else "")


def _strings(value: Any) -> Any:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


__all__ = ["LABELS", "TITLED_BY", "person_title", "short_title"]
