"""Remote ACP: every configured agent as an ACP endpoint over HTTP and WebSocket.

`connection.py` numbers and stores what each remote client is sent; `relay.py` fans a
live session out to the clients watching it and routes the agent's questions to them;
`service.py` answers what a client asks, method by method. The wire (HTTP + SSE and
WebSocket routes) is `gateway/acp_routes.py`, beside the other routes, above the service.
"""
