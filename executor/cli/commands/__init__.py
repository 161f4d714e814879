"""The `executor` commands, one module per area; `executor/cli/main.py` puts them together."""
