"""Real stand-ins for outside services, shared by every test suite (see each module)."""
