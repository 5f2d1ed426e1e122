"""Remote ACP: every configured agent as an ACP endpoint over HTTP and WebSocket.

`clients.py` numbers and stores what each remote client is sent; `reader.py` reads a
conversation's log for the remote clients that watch it, once for here and far;
`bridge.py` translates the log for a client that settled ACP v2;
`relay.py` is that reader for a session live here (and routes the agent's questions
to its clients), `far.py` for one live on another replica; `service.py` answers what
a client asks, method by method. The wire (HTTP + SSE and WebSocket routes) is
`gateway/acp_routes.py`, beside the other routes, above the service.
"""
