"""A wrapper (like npx or a node shim) around a "native" child that does the real work.

    python wrapper.py [--ignore-term] --pidfile FILE

The child inherits stdin/stdout and ignores EOF; the wrapper only waits for
it. Only signalling the whole process group stops both.
"""

from __future__ import annotations

import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
with open(sys.argv[sys.argv.index("--pidfile") + 1], "a") as f:
    f.write(f"{os.getpid()}\n")
child = subprocess.Popen([sys.executable, os.path.join(here, "stubborn.py"), *sys.argv[1:]])
sys.exit(child.wait())
