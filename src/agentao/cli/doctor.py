"""`agentao doctor [--json] [--offline]`: what this machine gives the agent, and what is missing.

Each check is a `Check(name, ok, detail, needed)`. A check that is not `needed` (Chromium,
which only the web UI's browser tests use) informs and never fails the run. Nothing
is changed; the only network call is one request to the configured LLM endpoint's
model list (skipped with `--offline`), with the key sent as that endpoint expects and
never printed. Exit code 0 when every needed check is fine, 1 otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace

from agentao import __version__
from agentao.credentials import redact_secrets

REACH_TIMEOUT = 5.0  # seconds for the endpoint check


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str
    needed: bool = True  # a failed check that is not needed does not fail the run


def check_install() -> Check:
    import agentao

    where = os.path.dirname(os.path.abspath(agentao.__file__))
    return Check(
        "install", True, f"agentao {__version__}, Python {sys.version.split()[0]}, {where}"
    )


def check_provider() -> Check:
    from agentao.agent.config import resolve_provider
    from agentao.agent.providers.errors import LlmError

    configured = (os.environ.get("LLM_PROVIDER") or "OPENAI").strip().upper()
    try:
        llm = resolve_provider()
    except (LlmError, ValueError) as exc:
        return Check("LLM provider", False, f"{configured}: {exc}")
    if llm.script is not None and not os.path.isfile(llm.script):
        return Check("LLM provider", False, f"SCRIPTED: AGENTAO_SCRIPT={llm.script} is not a file")
    where = f" at {llm.base_url}" if llm.base_url else ""
    return Check("LLM provider", True, f"{llm.provider_id}, model {llm.model}{where}")


def check_endpoint() -> Check:
    """One GET of the provider's model list: is it there, and does it take the key?"""
    from agentao.agent.config import resolve_provider
    from agentao.agent.providers.errors import LlmError

    try:
        llm = resolve_provider()
    except (LlmError, ValueError):
        return Check("LLM endpoint", False, "not checked: the provider is not configured")
    if llm.provider_id == "SCRIPTED":
        return Check("LLM endpoint", True, "none needed (scripted replies)")
    url, headers = _models_request(llm.provider_id, llm.base_url, llm.api_key)
    return _reach(url, headers)


def _models_request(provider: str, base_url: str | None, key: str) -> tuple[str, dict[str, str]]:
    if provider == "ANTHROPIC":
        root = (base_url or "https://api.anthropic.com").rstrip("/")
        return f"{root}/v1/models", {"x-api-key": key, "anthropic-version": "2023-06-01"}
    return f"{(base_url or '').rstrip('/')}/models", {"Authorization": f"Bearer {key}"}


def _reach(url: str, headers: dict[str, str]) -> Check:
    import httpx

    try:
        response = httpx.get(url, headers=headers, timeout=REACH_TIMEOUT, follow_redirects=True)
    except httpx.HTTPError as exc:
        return Check("LLM endpoint", False, f"{url} is unreachable: {type(exc).__name__}: {exc}")
    status = response.status_code
    if status in (401, 403):
        return Check("LLM endpoint", False, f"{url} answered {status}: the key was refused")
    if status >= 400:
        return Check("LLM endpoint", False, f"{url} answered HTTP {status}")
    return Check("LLM endpoint", True, f"{url} answered {status}")


def check_sandbox() -> Check:
    from agentao.agent.sandbox import Sandbox, SandboxSettings

    try:
        status = Sandbox(SandboxSettings.from_env()).status()
    except ValueError as exc:
        return Check("shell sandbox", False, str(exc))
    if status.available:
        return Check("shell sandbox", True, f"{status.backend}: shell commands run confined")
    return Check(
        "shell sandbox",
        False,
        f"unavailable ({status.reason}): every shell command asks first, and none runs in "
        "the read-only and plan modes",
    )


def check_agent_sandbox() -> Check:
    """Whether `agentao serve` can confine the agent processes it runs (gateway/confine.py)."""
    from agentao.gateway.confine import probe

    outer = probe()
    if outer.available:
        return Check(
            "agent sandbox",
            True,
            "bwrap: every agent process `agentao serve` runs is confined to its workspace",
        )
    return Check(
        "agent sandbox",
        False,
        f"unavailable ({outer.reason}): `agentao serve` refuses agents to API keys below "
        "'all' unless [server] allow_unconfined_agents = true",
        needed=False,  # only the gateway needs it, and only for keys below `all`
    )


def check_rules() -> Check:
    from agentao.agent.permissions import PermissionRulesError, load_policy, rules_file

    path = rules_file()
    try:
        policy = load_policy(path)
    except PermissionRulesError as exc:
        return Check("permission rules", False, f"invalid, sessions will not start: {exc}")
    if not path.exists():
        return Check("permission rules", True, f"none ({path} does not exist)")
    extra = policy.sandbox
    paths = len(extra.read) + len(extra.write)
    return Check(
        "permission rules",
        True,
        f"{len(policy.rules)} rule(s), {paths} extra sandbox path(s), "
        f"network for all commands: {'yes' if extra.network else 'no'} ({path})",
    )


def check_catalog() -> Check:
    from agentao.agent.catalog import CatalogError, catalog_path, load_catalog

    path = catalog_path()
    try:
        catalog = load_catalog()
    except CatalogError as exc:
        return Check("model catalog", False, f"invalid, sessions will not start: {exc}")
    if catalog is None:
        return Check(
            "model catalog",
            True,
            f"none ({path} does not exist): the provider's /v1/models, else the configured model",
        )
    providers = len(catalog.providers)
    return Check(
        "model catalog", True, f"{providers} provider(s), {len(catalog.models)} model(s) ({path})"
    )


def check_state() -> Check:
    from agentao.store.paths import state_dir

    path = state_dir()
    if path.exists() and not os.access(path, os.W_OK):
        return Check("state directory", False, f"{path} is not writable")
    return Check("state directory", True, f"{path}{'' if path.exists() else ' (not created yet)'}")


def check_gateway_token() -> Check:
    """Where a keyless gateway's local token is (`agentao run`/`connect` read it for a
    loopback URL), and whether the file is one they will trust; never its value."""
    from agentao.local_token import LocalTokenError, read_token, token_path
    from agentao.store.paths import state_dir

    path = token_path(state_dir())
    if not os.path.lexists(path):
        return Check("gateway token", True, f"{path} (made by the first keyless `agentao serve`)")
    try:
        read_token(path)
    except LocalTokenError as exc:
        return Check("gateway token", False, str(exc))
    return Check("gateway token", True, f"{path} (mode 0600, this user's)")


def check_mcp() -> Check:
    return Check(
        "MCP servers",
        True,
        "the editor names them per session (session/new); agentao starts no others",
    )


def check_chromium() -> Check:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    detail = found or "not found (only the web UI's browser tests use it: apt install chromium)"
    return Check("chromium", found is not None, detail, needed=False)


CHECKS: tuple[Callable[[], Check], ...] = (
    check_install,
    check_provider,
    check_endpoint,
    check_catalog,
    check_sandbox,
    check_agent_sandbox,
    check_rules,
    check_state,
    check_gateway_token,
    check_mcp,
    check_chromium,
)


def run_checks(offline: bool = False) -> list[Check]:
    skip = {check_endpoint} if offline else set()
    return [check() for check in CHECKS if check not in skip]


def main(json_output: bool = False, offline: bool = False) -> int:
    """Print every check; 0 when all needed ones are fine, 1 otherwise."""
    # A setting shown in a detail (OPENAI_BASE_URL, a store URL) may carry a password.
    results = [replace(r, detail=redact_secrets(r.detail)) for r in run_checks(offline)]
    healthy = all(r.ok or not r.needed for r in results)
    if json_output:
        print(json.dumps({"ok": healthy, "checks": [asdict(r) for r in results]}, indent=2))
    else:
        width = max(len(r.name) for r in results)
        for r in results:
            mark = "ok " if r.ok else ("!! " if r.needed else "-- ")
            print(f"{mark} {r.name:<{width}}  {r.detail}")
    return 0 if healthy else 1


__all__ = ["CHECKS", "Check", "main", "run_checks"]
