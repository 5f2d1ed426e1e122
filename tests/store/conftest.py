"""The gateway's store on each backend: every test taking `store` runs on SQLite and on a
real PostgreSQL server (a database of its own per test)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentao.store.gateway import GatewayStore, open_store

STORE_BACKENDS = ("sqlite", "postgres")


@pytest.fixture(params=STORE_BACKENDS)
def store_target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a store lives: a SQLite file, or a new PostgreSQL database's URL."""
    if request.param == "postgres":
        return request.getfixturevalue("pg_url")
    return str(tmp_path / "gw.sqlite3")


@pytest.fixture
async def store(store_target: str) -> AsyncIterator[GatewayStore]:
    s = open_store(store_target)
    yield s
    await s.close()
