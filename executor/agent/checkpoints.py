"""The checkpointer that makes a session resumable: SQLite under EXECUTOR_HOME, or Postgres by URL."""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager

from executor.core.errors import BackendError, ConfigError
from executor.core.fs import private_file
from executor.core.settings import Settings


@contextmanager
def open_checkpointer(settings: Settings):
    url = settings.checkpoint_url
    if url and url.startswith(("postgresql://", "postgres://")):
        from langgraph.checkpoint.postgres import PostgresSaver

        try:
            with PostgresSaver.from_conn_string(url) as saver:
                saver.setup()
                yield saver
        except Exception as exc:  # psycopg's errors; anything else is a bug and will show its traceback
            if exc.__class__.__module__.startswith("psycopg"):
                raise BackendError(f"checkpoint database unavailable: {str(exc).splitlines()[0]}") from exc
            raise
        return
    if url:
        raise ConfigError(  # a setting to change, not a backend down: exit 2
            "EXECUTOR_CHECKPOINT_URL must be a postgresql:// URL (SQLite under EXECUTOR_HOME is the default)"
        )
    from langgraph.checkpoint.sqlite import SqliteSaver

    settings.ensure_home()
    path = private_file(settings.home / "checkpoints.sqlite")
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        yield SqliteSaver(conn)
    except sqlite3.DatabaseError as exc:  # a damaged file, a full disk, a lock held too long
        raise BackendError(f"checkpoint database {path} unusable: {exc}") from exc
    finally:
        conn.close()
