"""The key the command's clients send to an agent at a URL.

`AGENTAO_REMOTE_KEY` when set (an explicit key wins); else, for a loopback URL, the
local token of this user's keyless gateway (`agentao/local_token.py`), read from the
state directory as `agentao serve` wrote it; else none.
"""

from __future__ import annotations

import os

from agentao.client.remote import REMOTE_KEY_ENV, AgentUrl
from agentao.local_token import token_for_url
from agentao.store.paths import state_dir


def remote_key(url: str) -> str | None:
    """The bearer key for `url` (raises `LocalTokenError` for an untrustworthy token file)."""
    return os.environ.get(REMOTE_KEY_ENV) or token_for_url(url, state_dir())


def remote_agent(url: str) -> AgentUrl:
    return AgentUrl(url.strip(), api_key=remote_key(url))


__all__ = ["remote_agent", "remote_key"]
