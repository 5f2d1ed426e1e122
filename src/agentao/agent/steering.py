"""A session's steering inbox: words a person adds while a turn runs.

The turn loop (`turn.py`) opens the inbox when a turn starts and drains it before each
model request, so what was put in reaches the model as a user message at its next step,
after the tool output the model is about to see. A turn whose model is done while the
inbox holds text takes one more step instead of ending: text the inbox accepted is never
dropped by a turn that ends normally. When the turn ends the inbox closes; while closed
`put` refuses (the caller decides what an idle session does with the text, e.g. start a
turn of its own). A cancelled turn's unread text goes with it.

The inbox knows nothing of the wire: the server's `_session/steering` (server/steering.py)
puts text here and tells the client where it landed.
"""

from __future__ import annotations

__all__ = ["SteeringInbox"]


class SteeringInbox:
    """Text for the running turn's next model request; open only while a turn runs."""

    def __init__(self) -> None:
        self._texts: list[str] = []
        self._open = False

    @property
    def accepting(self) -> bool:
        """A turn runs and has not yet decided to end: `put` now reaches its model."""
        return self._open

    @property
    def pending(self) -> bool:
        return bool(self._texts)

    @property
    def waiting(self) -> int:
        """How many texts wait for the turn's next step (the caller bounds it)."""
        return len(self._texts)

    def open(self) -> None:
        """A turn starts: from now on `put` is taken."""
        self._texts.clear()
        self._open = True

    def close(self) -> None:
        """The turn ends: what it never read is dropped, and `put` refuses."""
        self._texts.clear()
        self._open = False

    def put(self, text: str) -> bool:
        """Add `text` for the running turn's next step; False when no turn would read it."""
        if not self._open:
            return False
        self._texts.append(text)
        return True

    def drain(self) -> list[str]:
        """Everything put since the last drain, oldest first."""
        texts, self._texts = self._texts, []
        return texts
