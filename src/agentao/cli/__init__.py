"""The `agentao` command and its faces for people: `run`, `demo`, `doctor`, the terminal renderer.

The library (`agentao.client`) knows nothing of these; `main` imports each face only
when it is chosen, so `agentao --acp` answers `initialize` without paying for them.
"""

from agentao.cli.main import main

__all__ = ["main"]
