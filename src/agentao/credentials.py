"""Which environment variables are credentials, so commands never inherit them.

A leaf module every layer may use: the agent's local shell, the sandbox and the
client's terminals all start processes from an environment that must not carry the
LLM provider's key or any other secret the starting process holds.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

# Providers whose credentials never reach a command (`{PREFIX}_API_KEY` of any prefix
# is caught by the generic rule too, whatever LLM_PROVIDER names).
PROVIDER_PREFIXES = (
    "OPENAI",
    "AZURE_OPENAI",
    "ANTHROPIC",
    "CLAUDE",
    "DEEPSEEK",
    "DASHSCOPE",
    "QWEN",
    "OPENROUTER",
    "GEMINI",
    "GOOGLE",
    "MISTRAL",
    "GROQ",
    "TOGETHER",
    "FIREWORKS",
    "XAI",
    "COHERE",
    "MOONSHOT",
    "KIMI",
    "ZHIPU",
    "GLM",
    "HF",
    "HUGGINGFACE",
    "HUGGING_FACE_HUB",
    "PERPLEXITY",
    "VOYAGE",
    "REPLICATE",
    "SILICONFLOW",
    "VOLCENGINE",
    "ARK",
    "BAICHUAN",
    "MINIMAX",
    "OLLAMA",
    "VLLM",
    "LLM",
)
_PROVIDER = re.compile(r"^(?:" + "|".join(PROVIDER_PREFIXES) + r")_(?:\w*_)?(?:TOKEN|SECRET|KEY)$")
# Any name with a credential word as a whole `_`-separated part: GITHUB_TOKEN,
# AWS_SECRET_ACCESS_KEY, PGPASSWORD's cousins DB_PASSWORD, SSH_AUTH_SOCK (a key agent).
_GENERIC = re.compile(
    r"(?:^|_)(?:API_?KEY|APIKEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|PRIVATE_KEY"
    r"|ACCESS_KEY|CREDENTIALS?|AUTH|SESSION_KEY)(?:_|$)|^PGPASSWORD$"
)


def is_secret_name(name: str) -> bool:
    """Whether an environment variable looks like a credential a command must not see."""
    upper = name.upper()
    return bool(_PROVIDER.match(upper) or _GENERIC.search(upper))


def scrubbed_env(
    environ: Mapping[str, str] | None = None, keep: Iterable[str] = ()
) -> dict[str, str]:
    """`environ` (default: os.environ) without credentials, except the names in `keep`."""
    source = os.environ if environ is None else environ
    kept = frozenset(keep)
    return {k: v for k, v in source.items() if k in kept or not is_secret_name(k)}


__all__ = ["PROVIDER_PREFIXES", "is_secret_name", "scrubbed_env"]
