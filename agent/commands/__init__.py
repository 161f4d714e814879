"""The `executor` commands, one module per area; `agent/cli.py` puts them together."""
