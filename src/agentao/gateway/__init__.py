"""agentao serve: ACP agents behind an OpenAI-compatible API, a task stream and a web UI.

Import from the module that names the thing: `agentao.gateway.app.create_app`,
`agentao.gateway.config.GatewayConfig`, ...
"""
