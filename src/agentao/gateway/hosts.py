"""Host names and browser origins, parsed and compared the one way the gateway knows.

    split_host("[::1]:8765")             -> ("[::1]", 8765)
    normalize_origin("HTTP://Foo:80")    -> "http://foo"
    Authority.parse("localhost:8765", "http") == Authority("localhost", 8765)

An origin is `scheme://host[:port]`; two are the same when scheme, host and port
(with the scheme's default filled in) are equal. IPv6 literals keep their brackets,
as they appear in both `Host` and `Origin` headers.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
# A WebSocket's scope says ws/wss; the page that opened it has an http(s) origin.
WEB_SCHEME = {"ws": "http", "wss": "https", "http": "http", "https": "https"}


@dataclass(frozen=True, slots=True)
class Authority:
    """A host and port as a request names them, the port filled in from the scheme."""

    host: str
    port: int

    @classmethod
    def parse(cls, value: str, scheme: str) -> Authority | None:
        host, port = split_host(value.strip().lower())
        if not host:
            return None
        return cls(host, port if port is not None else DEFAULT_PORTS.get(scheme, 80))


@dataclass(frozen=True, slots=True)
class Origin:
    scheme: str
    authority: Authority

    @classmethod
    def parse(cls, value: str) -> Origin | None:
        """None for anything but `http(s)://host[:port]` (e.g. "null", a path)."""
        scheme, sep, rest = value.strip().lower().partition("://")
        if not sep or scheme not in ("http", "https") or "/" in rest or "@" in rest:
            return None
        authority = Authority.parse(rest, scheme)
        return cls(scheme, authority) if authority is not None else None

    def __str__(self) -> str:
        host, port = self.authority.host, self.authority.port
        return (
            f"{self.scheme}://{host}"
            if port == DEFAULT_PORTS[self.scheme]
            else (f"{self.scheme}://{host}:{port}")
        )


def split_host(value: str) -> tuple[str, int | None]:
    """`name[:port]` or `[v6][:port]` -> (name, port); ("", None) when it does not parse."""
    if value.startswith("["):
        name, sep, rest = value.partition("]")
        if not sep or (rest and not rest.startswith(":")):
            return "", None
        name, port = name + "]", rest[1:]
    else:
        name, sep, port = value.partition(":")
        if sep and not port:
            return "", None
    if any(c.isspace() or c in "/@?#" for c in name):
        return "", None
    if not port:
        return name, None
    if not port.isdigit() or not 0 < int(port) < 65536:
        return "", None
    return name, int(port)


def normalize_host(entry: str) -> str:
    """A configured host: `name` (any port) or `name:port`, lower case."""
    value = entry.strip().lower()
    if not split_host(value)[0]:
        raise ValueError(f"allowed host {entry!r}: expected a name or name:port, e.g. example.com")
    return value


def normalize_origin(entry: str) -> str:
    """A configured origin: `scheme://host[:port]`, lower case, no default port."""
    origin = Origin.parse(entry)
    if origin is None:
        raise ValueError(
            f"allowed origin {entry!r}: expected scheme://host[:port], e.g. https://ui.example.com"
        )
    return str(origin)


__all__ = [
    "DEFAULT_PORTS",
    "WEB_SCHEME",
    "Authority",
    "Origin",
    "normalize_host",
    "normalize_origin",
    "split_host",
]
