"""`/rewind [N [files|conversation|both]]`: back to before an earlier prompt.

Without N it lists the session's prompts (the agent's `_session/rewind_points`), numbered
from 1 with how many files each changed. With N it asks the agent for a dry run first and
shows what would change, file by file (a file changed outside the agent since says so),
then asks: `y` rewinds, `f` rewinds overwriting those files too (offered only when there
are some), anything else or Ctrl-C leaves everything as it is. The mode is `both` unless
named. The agent's words (paths, reasons, prompts) are shown through `printable`.
"""

from __future__ import annotations

from prompt_toolkit.formatted_text import FormattedText

from agentao.cli.chat.commands import DONE, Chat, local
from agentao.cli.chat.keyboard import CANCEL, ask_key
from agentao.cli.render import printable
from agentao.client.rewind import RewindResult

__all__ = ["MODES"]

MODES = ("files", "conversation", "both")
PROMPT_CHARS = 70  # of a listed prompt's first line


@local("rewind", "/rewind [N [files|conversation|both]]: back to before prompt N")
async def _rewind(chat: Chat, args: str) -> str:
    words = args.split()
    if not words:
        await _list(chat)
        return DONE
    mode = words[1] if len(words) > 1 else "both"
    if not words[0].isdigit() or int(words[0]) < 1 or mode not in MODES or len(words) > 2:
        chat.screen.error(
            "/rewind takes a prompt's number (see /rewind) and files, conversation or both"
        )
        return DONE
    before = int(words[0]) - 1
    dry = await chat.session.rewind(before, mode=mode, dry_run=True)  # type: ignore[arg-type]
    if not _show(chat, dry, mode):
        return DONE
    key = await ask_key(_question(dry), ["y", "n", "f"] if dry.conflicts else ["y", "n"])
    if key in ("n", CANCEL):
        chat.screen.note("nothing rewound")
        return DONE
    done = await chat.session.rewind(before, mode=mode, force=key == "f")  # type: ignore[arg-type]
    _done(chat, done, mode, before + 1)
    return DONE


async def _list(chat: Chat) -> None:
    points = await chat.session.rewind_points()
    if not points:
        chat.screen.note("no prompts to rewind to yet")
        return
    for point in points:
        first = printable(point.text.splitlines()[0] if point.text else "")[:PROMPT_CHARS]
        files = f"  ({point.files} file{'s' if point.files != 1 else ''})" if point.files else ""
        chat.screen.note(f"{point.index + 1:>3}  {first}{files}")
    chat.screen.note("/rewind N: back to before prompt N (files and conversation)")


def _show(chat: Chat, dry: RewindResult, mode: str) -> bool:
    """The dry run on screen; False when there is nothing to rewind."""
    for change in dry.changes:
        why = f": {printable(change.reason)}" if change.reason else ""
        chat.screen.note(f"  {change.action:<14} {printable(change.path)}{why}")
    for note in dry.notes:
        chat.screen.note(f"  note: {printable(note)}")
    if mode != "files":
        chat.screen.note(f"  conversation: {dry.messages_dropped} prompt(s) dropped")
    elif not dry.changes:
        chat.screen.note("no file changed since that prompt")
        return False
    return True


def _question(dry: RewindResult) -> FormattedText:
    parts = [("bold", "Rewind? "), ("", "y: yes  n: no")]
    if dry.conflicts:
        parts.append(("", "  f: yes, overwriting the files changed outside the agent"))
    return FormattedText(parts)


def _done(chat: Chat, done: RewindResult, mode: str, prompt: int) -> None:
    if not done.can_rewind:
        chat.screen.error(f"nothing rewound: {printable(done.error)}")
        return
    files = len(done.files_changed)
    said = [f"{files} file{'s' if files != 1 else ''} restored"] if mode != "conversation" else []
    if done.conversation_rewound:
        said.append(f"the conversation is back before prompt {prompt}")
    chat.screen.note("rewound: " + "; ".join(said))
