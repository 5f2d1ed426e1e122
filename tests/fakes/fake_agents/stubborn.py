"""A fake agent that answers the handshake but ignores EOF on stdin (and maybe SIGTERM).

    python stubborn.py [--ignore-term] [--pidfile FILE]

After stdin closes it keeps running, so the client's shutdown must escalate:
EOF -> SIGTERM to the group -> (with --ignore-term) SIGKILL.
"""

from __future__ import annotations

import os
import signal
import sys
import time

from _wire import Wire

if "--ignore-term" in sys.argv:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if "--pidfile" in sys.argv:
    with open(sys.argv[sys.argv.index("--pidfile") + 1], "a") as f:
        f.write(f"{os.getpid()}\n")

wire = Wire()
while (msg := wire.read()) is not None:
    if msg.get("method") == "initialize":
        wire.reply(msg, {"protocolVersion": 1, "agentCapabilities": {}})
    elif msg.get("method") == "session/new":
        wire.reply(msg, {"sessionId": "s-stubborn"})
while True:  # EOF: ignore it
    time.sleep(1)
