"""Where the gateway's store lives: a SQLite file (a path) or a PostgreSQL database (a URL).

Nothing here imports a database driver, so telling the two apart, and saying where a URL
points without its password, costs nothing when PostgreSQL is not used.
"""

from __future__ import annotations

from urllib.parse import urlsplit

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
DEFAULT_POOL_SIZE = 8  # PostgreSQL connections one gateway holds at most
DEFAULT_CONNECT_SECONDS = 10.0  # connecting, or waiting for a pooled connection, at most
STORE_URL_ENV = "AGENTAO_STORE_URL"  # the store, when neither --store nor the config names one


class StoreUnavailable(RuntimeError):
    """The store's database cannot be reached or set up; the message says where, never
    with a password. `where` is host:port/database when the store is a URL."""

    def __init__(self, message: str, where: str | None = None) -> None:
        super().__init__(message)
        self.where = where


def is_postgres_url(target: object) -> bool:
    return isinstance(target, str) and target.startswith(POSTGRES_SCHEMES)


def redact_url(url: str) -> str:
    """`url` with its password replaced: fit for a message or a log line."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


def describe(url: str) -> str:
    """Where `url` points, as host:port/database (no user, no password)."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    return f"{host}:{parts.port or 5432}/{parts.path.lstrip('/') or parts.username or ''}"


def shown(target: str) -> str:
    """A store target fit for a log line: a path as is, a URL without its password."""
    return redact_url(target) if is_postgres_url(target) else target


__all__ = [
    "DEFAULT_CONNECT_SECONDS",
    "DEFAULT_POOL_SIZE",
    "POSTGRES_SCHEMES",
    "STORE_URL_ENV",
    "StoreUnavailable",
    "describe",
    "is_postgres_url",
    "redact_url",
    "shown",
]
