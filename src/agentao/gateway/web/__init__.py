"""The web UI: three static files (HTML, JS, CSS), no build step; it speaks the task stream."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

HERE = Path(__file__).parent
router = APIRouter()

_FILES = {
    "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
}


@router.get("/", include_in_schema=False)
async def index() -> FileResponse:
    return FileResponse(HERE / "index.html", media_type="text/html; charset=utf-8")


@router.get("/ui/{name}", include_in_schema=False)
async def asset(name: str) -> FileResponse:
    from agentao.gateway.errors import NotFound

    media = _FILES.get(name)
    if media is None:
        raise NotFound(f"no such file {name!r}")
    return FileResponse(HERE / name, media_type=media)


__all__ = ["router"]
