"""The `executor` command line: parses, calls the services, prints."""
