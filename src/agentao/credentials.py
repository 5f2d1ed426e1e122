"""Credentials: which environment variables hold them, and how text is cleaned of them.

A leaf module every layer may use: the agent's local shell, the sandbox and the
client's terminals all start processes from an environment that must not carry the
LLM provider's key or any other secret the starting process holds.

`redact_secrets` is the one function that cleans text of the secrets a URL or a log
line can carry: a URL's userinfo (`user:password@`, `token@`), query parameters named
like secrets (`?password=`, `&api_key=`, `sslpassword=` in a libpq conninfo too),
bearer tokens, `Authorization`/`Cookie` header values and the gateway's WebSocket key
subprotocol. It works on whole messages and tracebacks, not only on a lone URL, so it
runs over every error, log record (`RedactSecrets`, on the agent's and the gateway's
log handlers), top-level error and `doctor` line. It may hide more than a secret; it
must never show one.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

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


REDACTED = "[redacted]"
# A parameter whose name ends like a credential: password, sslpassword, passwd, pwd,
# token, access_token, key, api_key, secret, client_secret, sig, signature, auth, ….
_SECRET_PARAM = (
    r"[A-Za-z0-9_.-]*?(?:pass(?:word|wd|phrase)?|pwd|token|secret|key|sig(?:nature)?"
    r"|auth|credentials?)"
)
_RULES = (
    # scheme://userinfo@host: the whole userinfo (a "user" may be a token), up to the
    # last `@` of the authority, as URL parsers read it (`u:p@ss@host`).
    (re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://)[^\s/?#'\"<>]*@"), rf"\1{REDACTED}@"),
    # name=value in a URL's query (after `?`, `&` or `;`): up to the next `&` or `#`.
    (re.compile(rf"([?&;](?i:{_SECRET_PARAM})=)[^&#\s'\"<>]*"), rf"\1{REDACTED}"),
    # name=value in a libpq conninfo (after a space or the start): a quoted value, or
    # up to the next space (a conninfo value may hold `&` or `;`).
    (
        re.compile(rf"((?:^|(?<=\s))(?i:{_SECRET_PARAM})\s*=\s*)('(?:[^'\\]|\\.)*'|\S*)"),
        rf"\1{REDACTED}",
    ),
    # "password": "…" in JSON or a dict's repr.
    (
        re.compile(rf"""(["'](?i:{_SECRET_PARAM})["']\s*:\s*)(["'])(?:(?!\2).)*\2"""),
        rf"\1\2{REDACTED}\2",
    ),
    (re.compile(r"\b(bearer\s+)\S+", re.I), rf"\1{REDACTED}"),
    (re.compile(r"agentao\.key\.[A-Za-z0-9_=-]+"), f"agentao.key.{REDACTED}"),
    (re.compile(r"\b((?:proxy-)?authorization|cookie)(\s*:\s*)\S.*", re.I), rf"\1\2{REDACTED}"),
)


def redact_secrets(text: str) -> str:
    """`text` with every URL userinfo and secret-named parameter replaced by a marker."""
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text


class _Shown:
    """A log argument that is not a string, shown (by %s or %r) only once redacted."""

    def __init__(self, value: object, redact: Any) -> None:
        self._str, self._repr = redact(str(value)), redact(repr(value))

    def __str__(self) -> str:
        return self._str

    def __repr__(self) -> str:
        return self._repr


class RedactSecrets(logging.Filter):
    """A handler filter: a record's message, arguments and traceback, redacted.

    Arguments are rewritten one by one rather than formatted into the message, because
    some formatters (uvicorn's access log) unpack them; numbers stay numbers. The
    traceback is formatted here (the handler's formatter then reuses `exc_text`), so
    an exception's message or a URL in a frame's source line is redacted too.
    """

    def redact(self, text: str) -> str:
        """The rule for this filter's records (a subclass may be stricter)."""
        return redact_secrets(text)

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and record.args:
            record.args = tuple(self.redact_args(record.args))
        elif isinstance(record.args, Mapping) and record.args:
            record.args = {k: self.redact_arg(v) for k, v in record.args.items()}
        elif isinstance(record.msg, str):  # a format string is code, not data: left alone
            record.msg = self.redact(record.msg)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redact(record.stack_info)
        return True

    def redact_args(self, args: tuple[Any, ...]) -> list[Any]:
        return [self.redact_arg(arg) for arg in args]

    def redact_arg(self, arg: Any) -> Any:
        if isinstance(arg, str):
            return self.redact(arg)
        if arg is None or isinstance(arg, int | float):
            return arg
        return _Shown(arg, self.redact)


__all__ = [
    "PROVIDER_PREFIXES",
    "REDACTED",
    "RedactSecrets",
    "is_secret_name",
    "redact_secrets",
    "scrubbed_env",
]
