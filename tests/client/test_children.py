"""client/children.py: which session is whose child, against what an agent may announce.

The attack: an agent's announcements are its own words. A child naming itself, a child
announced again under another parent, and a loop of parents (A is B's child and B is
A's) must neither hang the client nor move a session under a new root."""

from __future__ import annotations

from agentao.client.children import MAX_CHILD_DEPTH, ChildLinks
from agentao.protocol import schema


def announce(links: ChildLinks, parent: str, child: str) -> None:
    links.note(parent, "subagent_update", schema.SubagentUpdateSessionUpdate(session_id=child))


def test_a_grandchild_reaches_the_root() -> None:
    links = ChildLinks()
    announce(links, "root", "child")
    announce(links, "child", "grandchild")
    assert [links.root(s) for s in ("root", "child", "grandchild")] == ["root"] * 3


def test_a_session_is_never_its_own_child_and_a_child_keeps_its_first_parent() -> None:
    links = ChildLinks()
    announce(links, "a", "a")
    announce(links, "a", "b")
    announce(links, "other", "b")  # announced again elsewhere: still a's
    assert links.root("a") == "a" and links.root("b") == "a"


def test_a_loop_of_parents_ends() -> None:
    links = ChildLinks()
    announce(links, "a", "b")
    announce(links, "b", "a")  # a is now b's child, b a's: a loop
    assert links.root("a") in ("a", "b") and links.root("b") in ("a", "b")
    chain = ChildLinks()
    for n in range(MAX_CHILD_DEPTH * 2):
        announce(chain, f"s{n}", f"s{n + 1}")
    assert chain.root(f"s{MAX_CHILD_DEPTH * 2}") == f"s{MAX_CHILD_DEPTH}"  # cut, not followed


def test_only_a_subagent_update_names_a_child() -> None:
    links = ChildLinks()
    links.note("a", "session_info_update", schema.SubagentUpdateSessionUpdate(session_id="b"))
    assert links.root("b") == "b"


def test_a_session_the_client_opened_is_never_anothers_child() -> None:
    """Two people's sessions on one agent process: an announcement naming another opened
    session as a child must not carry its updates, nor its questions, to this one's reader."""
    links = ChildLinks()
    links.opened("bob")
    announce(links, "alice", "bob")
    assert links.root("bob") == "bob"
    announce(links, "alice", "carol")  # announced before carol's session/new is answered
    links.opened("carol")
    assert links.root("carol") == "carol"
