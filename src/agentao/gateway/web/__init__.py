"""The web UI: `index.html` and the bundle built from `webui/` into `dist/` (see README).

The bundle (`dist/app.js`, `dist/app.css`) is made at install time by `npm ci && npm run
build` (hatch_build.py runs it), from npm packages locked in `webui/package-lock.json`:
nothing is fetched when the page runs, so the UI works offline. The page is served with a
Content-Security-Policy that allows scripts and styles from this origin only, so even
model output that slipped past the sanitizer could not run a script.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse, HTMLResponse, Response

HERE = Path(__file__).parent
BUNDLE = HERE / "dist"
router = APIRouter()

_FILES = {
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
}
# Our own scripts, styles and connections only: no inline script, no other origin, no
# plugins, not framed by another site.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff"}
MISSING = (
    "<!doctype html><title>agentao</title><p>The web UI's bundle is not built. From the "
    "source checkout: <code>cd webui &amp;&amp; npm ci &amp;&amp; npm run build</code> "
    "(or reinstall: <code>pip install .</code> builds it, and needs npm).</p>"
)


@router.get("/", include_in_schema=False)
async def index() -> Response:
    if not (BUNDLE / "app.js").is_file():
        return HTMLResponse(MISSING, status_code=503, headers=HEADERS)
    return FileResponse(HERE / "index.html", media_type="text/html; charset=utf-8", headers=HEADERS)


@router.get("/ui/{name}", include_in_schema=False)
async def asset(name: str) -> FileResponse:
    from agentao.gateway.errors import NotFound

    media = _FILES.get(name)
    if media is None or not (BUNDLE / name).is_file():
        raise NotFound(f"no such file {name!r}")
    return FileResponse(BUNDLE / name, media_type=media, headers=HEADERS)


__all__ = ["BUNDLE", "CSP", "router"]
