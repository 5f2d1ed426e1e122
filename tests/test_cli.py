"""cli.py: `agentao --acp` takes its fast path only for the exact forms editors use."""

from __future__ import annotations

import pytest

from agentao.cli.main import _acp_only

ROWS = [
    (["--acp"], (True, None)),
    (["--acp", "--resume"], (True, "")),
    (["--acp", "--resume", "abc"], (True, "abc")),
    (["--acp", "--resume", "--help"], (False, None)),  # argparse says what that means
    (["--acp", "--version"], (False, None)),
    (["--acp", "--resume", "a", "b"], (False, None)),
    (["run", "--acp"], (False, None)),
    ([], (False, None)),
]


@pytest.mark.parametrize(("argv", "expected"), ROWS, ids=[" ".join(r[0]) or "none" for r in ROWS])
def test_acp_fast_path(argv: list[str], expected: tuple[bool, str | None]) -> None:
    assert _acp_only(argv) == expected


def test_run_help_lists_agentaos_modes_as_the_agent_has_them() -> None:
    from agentao.agent.permissions import MODES
    from agentao.cli.main import AGENTAO_MODES

    assert [mode for mode, _ in AGENTAO_MODES] == [m.id for m in MODES]


TYPOS = [
    (["run", "--aprove", "all", "hi"], "unrecognized argument --aprove; did you mean --approve?"),
    (["run", "--approve=all", "--jsn", "hi"], "did you mean --json?"),
    (["rnu", "hi"], "unknown command 'rnu'; did you mean 'run'?"),
    (["--verison"], "did you mean --version?"),
    (["run", "--zzzzzz", "hi"], "unrecognized argument --zzzzzz"),
]


@pytest.mark.parametrize(("argv", "message"), TYPOS, ids=[" ".join(t[0]) for t in TYPOS])
def test_a_typo_stops_with_did_you_mean(argv, message, capsys) -> None:
    from agentao.cli.main import _did_you_mean, _parser

    with pytest.raises(SystemExit) as stopped:
        _did_you_mean(_parser(), argv)
    assert stopped.value.code == 2 and message in capsys.readouterr().err


ACCEPTED = [
    ["run", "--appr", "all", "hi"],  # a prefix, as argparse takes it
    ["run", "--approve=all", "--json", "a prompt with --aprove in it"],
    ["run", "--", "--aprove"],  # after --, a prompt
    ["--acp", "--resume", "abc"],
    ["serve", "--agent", "qwen=qwen --acp"],
]


@pytest.mark.parametrize("argv", ACCEPTED, ids=[" ".join(a) for a in ACCEPTED])
def test_what_argparse_accepts_is_not_called_a_typo(argv) -> None:
    from agentao.cli.main import _did_you_mean, _parser

    _did_you_mean(_parser(), argv)


LOCAL = [
    ("/help", ("help", "")),
    ("  /model  gpt-4o ", ("model", "gpt-4o")),
    ("/model", ("model", "")),
    ("/compact", None),  # the agent's own command: sent to it
    ("explain /help", None),
    ("/helpme", None),
]


@pytest.mark.parametrize(("prompt", "expected"), LOCAL, ids=[p for p, _ in LOCAL])
def test_local_commands_are_only_the_local_names(prompt, expected) -> None:
    from agentao.cli.local_commands import parse_local

    parsed = parse_local(prompt)
    assert (None if parsed is None else (parsed.name, parsed.argument)) == expected
