"""Bytecode for the processes a test run starts, where the environment forbids writing it.

With `PYTHONDONTWRITEBYTECODE` set (as in many container images, and on the machines
this project is built on), Python never caches what it compiles: every agent, gateway and
client process a test starts compiles the whole `agentao` package again, about 90 ms of an
agent's start and 0.5 s of a served gateway's (tests/e2e alone spent 91 s of CPU on it).
The run's first process compiles the package once into its usual `__pycache__`
directories (gitignored), which every later process reads as on any machine that writes
bytecode; the variable still keeps each process from writing anything else. Sources
changed since are compiled again here, and Python checks each cached file against its
source's mtime before using it.
"""

from __future__ import annotations

import compileall
import sys
from pathlib import Path

import agentao

PACKAGE = Path(agentao.__file__).parent


def compile_package() -> None:
    """Compile `agentao` into its `__pycache__` directories when nothing else would."""
    if sys.dont_write_bytecode:
        compileall.compile_dir(PACKAGE, quiet=1)


__all__ = ["PACKAGE", "compile_package"]
