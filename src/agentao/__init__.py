"""agentao: an Agent Client Protocol agent, client and OpenAI-compatible gateway."""

__version__ = "0.1.0"
