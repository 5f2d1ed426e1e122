"""`agentao doctor`: what this machine gives the agent, and what is missing, in one screen.

Each check is a `Check(name, ok, detail)`; nothing here changes anything or reaches
the network. Exit code 0 when every check is fine, 1 when one needs attention.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

from agentao import __version__


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str


def check_provider() -> Check:
    from agentao.agent.config import resolve_provider
    from agentao.agent.providers.errors import LlmError

    configured = (os.environ.get("LLM_PROVIDER") or "OPENAI").strip().upper()
    try:
        llm = resolve_provider()
    except LlmError as exc:
        return Check("LLM provider", False, f"{configured}: {exc}")
    if llm.script is not None and not os.path.isfile(llm.script):
        return Check("LLM provider", False, f"SCRIPTED: AGENTAO_SCRIPT={llm.script} is not a file")
    where = f" at {llm.base_url}" if llm.base_url else ""
    return Check("LLM provider", True, f"{llm.provider_id}, model {llm.model}{where}")


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


CHECKS: tuple[Callable[[], Check], ...] = (
    check_provider,
    check_catalog,
    check_sandbox,
    check_rules,
    check_state,
)


def main() -> int:
    """Print every check; 0 when all are fine, 1 otherwise."""
    print(f"agentao {__version__} (Python {sys.version.split()[0]})")
    results = [check() for check in CHECKS]
    width = max(len(r.name) for r in results)
    for r in results:
        print(f"{'ok ' if r.ok else '!! '} {r.name:<{width}}  {r.detail}")
    return 0 if all(r.ok for r in results) else 1


__all__ = ["CHECKS", "Check", "main"]
