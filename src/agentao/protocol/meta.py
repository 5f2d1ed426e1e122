"""Keys agentao writes under `_meta`, ACP's channel for data the schema does not have.

The spec forbids custom fields at the root of its types ("all possible names are
reserved"), so whatever we add travels in `_meta`, under a key named like the spec's
own example (`zed.dev/debugMode`): a domain we own, a slash, a name.

USAGE   in a `session/prompt` result: the turn's token usage, shaped as the unstable
        schema's `Usage` ({totalTokens, inputTokens, outputTokens, thoughtTokens?,
        cachedReadTokens?, cachedWriteTokens?}). The stable schema has no
        `PromptResponse.usage`; readers also accept it there from other agents.
MODE_ID in a `session/set_mode` result: the mode id now in force (seed C.10 echoes it;
        the stable SetSessionModeResponse has only `_meta`).
REASON  in a `session/request_permission` result: why the client answered as it did, in
        words for the person and the model ("the client's policy approves only read and
        search tools"); agentao's agent tells the model exactly that.
ESTIMATED  in a `usage_update`: true when `used` is an estimate (the provider reported no
        token counts).
COMPACTION in a finished `compaction_update`: {tokensBefore, tokensAfter, detail}.
V2_TOOL_CALL  in a v1 `tool_call`/`tool_call_update` the gateway logged from a v2 agent:
        what v1 has no field for, kept for the v2 readers of the log (the bridge puts it
        back): {capabilities?, status?} (`capabilities` as the agent sent it, `null`
        included; `status` only v2's own `cancelled`, which v1 reads as `failed`).
PARENT_TOOL_CALL  in a `subagent_update`: the parent's tool call the child runs in (the
        schema has no field for it; readers infer it only for agents that do not say).
V2_TERMINAL  in a v1 `tool_call_update` the gateway logged from a v2 agent whose tool call
        runs in the agent's own terminal: the v2 `terminal_update`s and
        `terminal_output_chunk`s the bridge sends v2 readers, {before: [...]} ahead of the
        tool call's own update, or {instead: [...]} of an update the gateway made of a
        terminal's (its output so far as the call's text, for v1 readers).
"""

from __future__ import annotations

USAGE = "agentao.cn/usage"
MODE_ID = "agentao.cn/modeId"
REASON = "agentao.cn/reason"
ESTIMATED = "agentao.cn/estimated"
COMPACTION = "agentao.cn/compaction"
V2_TOOL_CALL = "agentao.cn/v2ToolCall"
PARENT_TOOL_CALL = "agentao.cn/parentToolCallId"
V2_TERMINAL = "agentao.cn/v2Terminal"

__all__ = [
    "COMPACTION",
    "ESTIMATED",
    "MODE_ID",
    "PARENT_TOOL_CALL",
    "REASON",
    "USAGE",
    "V2_TERMINAL",
    "V2_TOOL_CALL",
]
