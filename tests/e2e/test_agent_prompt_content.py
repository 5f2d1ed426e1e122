"""Prompt content beyond text, over real pipes to the fake LLM: images reach OpenAI-style
and Anthropic providers in their formats when the model takes images (and are refused,
naming the model, when it does not); embedded resources reach the model with their URI
and text; resource links as before."""

from __future__ import annotations

import pytest

from tests.e2e.agent_process import agent_env, running

pytestmark = pytest.mark.timeout(60)

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
IMAGES_ON = "[providers.{p}]\n{kind}[[providers.{p}.models]]\nid = 'fake-model'\nimages = {on}\n"


def env_for(tmp_path, fake, prefix: str = "OPENAI", images: bool = True) -> dict[str, str]:
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    kind = 'kind = "anthropic"\n' if prefix == "ANTHROPIC" else ""
    on = "true" if images else "false"
    text = IMAGES_ON.format(p=prefix.lower(), kind=kind, on=on)
    (config / "models.toml").write_text(text)
    return agent_env(tmp_path / "home", AGENTAO_CONFIG_DIR=str(config), **fake.env(prefix))


def image_prompt(text: str = "what is in this picture?") -> list[dict]:
    return [{"type": "text", "text": text}, {"type": "image", "data": PNG, "mimeType": "image/png"}]


async def test_an_image_reaches_an_openai_style_provider(tmp_path, ws, fake_llm):
    fake_llm.reply("A red dot.")
    async with running(env_for(tmp_path, fake_llm)) as agent:
        sid = await agent.new_session(ws)
        params = {"sessionId": sid, "prompt": image_prompt()}
        reply = await agent.request("session/prompt", params)
    assert reply["result"]["stopReason"] == "end_turn"
    user = fake_llm.requests[0].body["messages"][-1]
    assert user["role"] == "user" and user["content"] == [
        {"type": "text", "text": "what is in this picture?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
    ]


async def test_an_image_reaches_an_anthropic_provider(tmp_path, ws, fake_llm):
    fake_llm.reply("A red dot.")
    async with running(env_for(tmp_path, fake_llm, "ANTHROPIC")) as agent:
        sid = await agent.new_session(ws)
        reply = await agent.request("session/prompt", {"sessionId": sid, "prompt": image_prompt()})
    assert reply["result"]["stopReason"] == "end_turn"
    [user] = fake_llm.requests[0].body["messages"]
    assert user["content"][0] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG},
    }
    assert user["content"][1] == {"type": "text", "text": "what is in this picture?"}


async def test_an_image_for_a_model_without_images_is_refused(tmp_path, ws, fake_llm):
    async with running(env_for(tmp_path, fake_llm, images=False)) as agent:
        init = agent.received[0]["result"]["agentCapabilities"]["promptCapabilities"]
        sid = await agent.new_session(ws)
        reply = await agent.request("session/prompt", {"sessionId": sid, "prompt": image_prompt()})
    assert init["image"] is False and init["embeddedContext"] is True
    assert reply["error"]["code"] == -32602 and "openai/fake-model" in reply["error"]["message"]
    assert fake_llm.requests == []


async def test_embedded_resources_reach_the_model_with_uri_and_text(tmp_path, ws, fake_llm):
    fake_llm.reply("Seen.")
    prompt = [
        {"type": "text", "text": "review this"},
        {
            "type": "resource",
            "resource": {
                "uri": "file:///src/app.py",
                "mimeType": "text/x-python",
                "text": "x = 1\n",
            },
        },
        {"type": "resource_link", "uri": "file:///src/lib.py", "name": "lib.py"},
        {
            "type": "resource",
            "resource": {"uri": "file:///logo.png", "mimeType": "image/png", "blob": PNG},
        },
    ]
    async with running(env_for(tmp_path, fake_llm, images=False)) as agent:
        sid = await agent.new_session(ws)
        reply = await agent.request("session/prompt", {"sessionId": sid, "prompt": prompt})
        await agent.call("session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
        replayed = agent.updates(sid)
    assert reply["result"]["stopReason"] == "end_turn"
    content = fake_llm.requests[0].body["messages"][-1]["content"]
    assert "review this" in content and "```file:///src/app.py\nx = 1\n\n```" in content
    assert "[lib.py](file:///src/lib.py)" in content
    assert "file:///logo.png (image/png" in content and PNG not in content  # no image model
    shown = [u["content"]["text"] for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
    assert "file:///src/app.py" in shown[-1]
