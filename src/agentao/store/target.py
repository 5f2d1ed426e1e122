"""Where the gateway's store lives: a SQLite file (a path) or a PostgreSQL database (a URL).

Nothing here imports a database driver, so telling the two apart, and saying where a URL
points without its password, costs nothing when PostgreSQL is not used.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from agentao.credentials import redact_secrets

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


class StoreUrlInvalid(ValueError):
    """A store URL that cannot be read; the message says why, never with the URL's secrets."""


def check_store_url(url: str) -> None:
    """Raise `StoreUrlInvalid` unless `url` (a PostgreSQL URL) can be read: its port a
    number, its host well formed, and (psycopg installed) its options known to libpq.
    Checked before any connection, so no library's error or traceback shows the URL."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises on a port that is not a number in 0..65535
    except ValueError as exc:
        raise StoreUrlInvalid(f"the store URL is malformed: {redact_secrets(str(exc))}") from None
    try:
        from psycopg import Error, conninfo
    except ImportError:
        return  # opening it will say that psycopg is missing
    try:
        conninfo.conninfo_to_dict(url)
    except Error as exc:
        reason = redact_secrets(str(exc).strip().splitlines()[0] if str(exc).strip() else "")
        raise StoreUrlInvalid(f"the store URL is malformed: {reason}") from None


def describe(url: str) -> str:
    """Where `url` points, as host:port/database (no user, no password)."""
    parts = urlsplit(url)
    try:
        port = parts.port or 5432
    except ValueError:
        port = "?"  # type: ignore[assignment]
    return (
        f"{parts.hostname or 'localhost'}:{port}/{parts.path.lstrip('/') or parts.username or ''}"
    )


def shown(target: str) -> str:
    """A store target fit for a log line: a path as is, a URL without its secrets."""
    return redact_secrets(target) if is_postgres_url(target) else target


__all__ = [
    "DEFAULT_CONNECT_SECONDS",
    "DEFAULT_POOL_SIZE",
    "POSTGRES_SCHEMES",
    "STORE_URL_ENV",
    "StoreUnavailable",
    "StoreUrlInvalid",
    "check_store_url",
    "describe",
    "is_postgres_url",
    "shown",
]
