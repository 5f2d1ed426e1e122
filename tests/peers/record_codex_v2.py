"""Record what codex-acp 2.x sends over ACP v2 into
tests/data/real-agent-transcripts/codex-acp-v2.jsonl (run from the checkout's root, with
the peers installed: `python tests/peers/record_codex_v2.py`).

The scenario, against the fake LLM (tests/fakes/fake_llm.py) driven by `v2_client.mjs`:
`say hello`; `read hello.txt` (the model runs `cat hello.txt`); `write out.txt` (the model
asks for an unsandboxed `echo`, so codex asks permission, and the client allows it).
Scrubbed: the throwaway directories become `/home/user/project` and `/home/user/.codex`,
the fake's port and key disappear, and timestamps stay relative (`t`).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.fakes.fake_llm import FakeLLM, FakeReply, FakeToolCall  # noqa: E402
from tests.npm_peers import NpmPeers, codex_env, find_peers  # noqa: E402

OUT = ROOT / "tests" / "data" / "real-agent-transcripts" / "codex-acp-v2.jsonl"
PROMPTS = ["say hello", "read hello.txt", "write out.txt"]
# Not under /tmp: codex's bubblewrap sandbox mounts a fresh /tmp, which would hide the
# sandbox helper codex links into CODEX_HOME (the read then fails: execvp
# codex-linux-sandbox: No such file or directory).
SCRATCH = "/var/tmp"


def script(fake: FakeLLM) -> None:
    # codex's side requests (a session title) use another model: keep them off the queue
    fake.respond = lambda body: FakeReply(["A title"]) if body.get("model") != fake.model else None
    fake.reply("Hello! ", "How can I help?")
    fake.reply(tool_calls=[FakeToolCall("exec_command", {"cmd": "cat hello.txt"})])
    fake.reply("It says ", "hi.")
    write = {"cmd": "echo shell-ok > out.txt", "sandbox_permissions": "require_escalated",
             "justification": "Write out.txt?"}  # fmt: skip
    fake.reply(tool_calls=[FakeToolCall("exec_command", write)])
    fake.reply("Wrote ", "out.txt.")


def record(peers: NpmPeers, base: Path) -> list[str]:
    ws, home = base / "project", base / "codex-home"
    ws.mkdir()
    (ws / "hello.txt").write_text("hi\n")
    with FakeLLM() as fake:
        script(fake)
        prompts = [arg for prompt in PROMPTS for arg in ("--prompt", prompt)]
        command = peers.client_command([str(peers.codex_acp)], "--cwd", str(ws), *prompts)
        # "workspace-write" asks the person; codex's default mode asks a reviewer model
        env = {**codex_env(home, fake), "INITIAL_AGENT_MODE": "workspace-write"}
        done = subprocess.run(command, env=env, capture_output=True,
                              text=True, timeout=120, check=True)  # fmt: skip
        return [scrub(line, ws, home, fake) for line in done.stdout.splitlines()]


def scrub(line: str, ws: Path, home: Path, fake: FakeLLM) -> str:
    for real, shown in ((str(home), "/home/user/.codex"), (str(ws), "/home/user/project"),
                        (str(ws.parent), "/home/user"), (fake.root_url, "http://llm.invalid"),
                        (fake.api_key, "<key>")):  # fmt: skip
        line = line.replace(real, shown)
    return re.sub(r"/tmp/[\w.-]+", "/tmp/<scrubbed>", line)


def main() -> None:
    peers = find_peers()
    if isinstance(peers, str):
        sys.exit(peers)
    with tempfile.TemporaryDirectory(dir=SCRATCH) as base:
        lines = record(peers, Path(base).resolve())
    OUT.write_text("".join(json.dumps(json.loads(line)) + "\n" for line in lines))
    print(f"{len(lines)} messages -> {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
