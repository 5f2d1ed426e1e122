"""Our agent's permission modes ranked by what they let the model do without asking.

A leaf module outside the layers (like `credentials.py`): the agent holds a session
below its process's ceiling with it (agent/ceiling.py), and the gateway computes that
ceiling from a key's rules with it (gateway/ceilings.py).
"""

from __future__ import annotations

# The highest mode a session may be in, set in the agent process's environment by whoever
# starts it (a gateway, per key ceiling): no client on the wire can reach it.
CEILING_ENV = "AGENTAO_MODE_CEILING"
MODE_RANK = {"read-only": 0, "plan": 0, "workspace-write": 1, "full-access": 2}
HIGHEST_MODE = "full-access"
DEFAULT_MODE = "workspace-write"
READ_ONLY_MODE = "read-only"  # writes nothing: the mode of a read-only key ceiling

__all__ = ["CEILING_ENV", "DEFAULT_MODE", "HIGHEST_MODE", "MODE_RANK", "READ_ONLY_MODE"]
