"""The tools the executor LLM (and an MCP host) may call: the registry (`registry.py`), what a handler gets and
gives back (`call.py`), and the handlers, thin adapters onto the retrieval services (`handlers.py`)."""
