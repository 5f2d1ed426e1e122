"""What every bubblewrap sandbox of ours starts from: the system, read-only.

A leaf module outside the layers: the agent's command sandbox (agent/sandbox.py) and the
gateway's sandbox around each agent process (gateway/confine.py) mount the same system.
"""

from __future__ import annotations

import os

# Read-only system directories (a symlink, as /bin is on merged-/usr systems, is made
# again as the same symlink).
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
# What a DNS lookup needs when the network is there (resolv.conf may point here).
RESOLVER_DIRS = ("/run/systemd/resolve",)


def system_mounts() -> list[str]:
    """bwrap arguments mounting the system directories that exist here, read-only."""
    args: list[str] = []
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def resolver_mounts() -> list[str]:
    return [a for d in RESOLVER_DIRS for a in ("--ro-bind-try", d, d)]


__all__ = ["RESOLVER_DIRS", "SYSTEM_DIRS", "resolver_mounts", "system_mounts"]
