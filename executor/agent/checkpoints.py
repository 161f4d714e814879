"""The checkpointer that makes a session resumable: SQLite under EXECUTOR_HOME, or Postgres by URL."""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager

from executor.core.errors import BackendError, ConfigError, DamagedError, display_url
from executor.core.fs import private_file
from executor.core.settings import Settings
from executor.stores.integrity import disk_full, sqlite_damage


@contextmanager
def open_checkpointer(settings: Settings):
    url = settings.checkpoint_url
    if url and url.startswith(("postgresql://", "postgres://")):
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.conninfo import make_conninfo

        from executor.stores.database import CONNECT_TIMEOUT_S

        try:
            # bounded as the database URL's connection is: a server that accepts and never answers held `ask`
            # silent for psycopg's 130 s (hostile19 finding 5)
            with PostgresSaver.from_conn_string(make_conninfo(url, connect_timeout=CONNECT_TIMEOUT_S)) as saver:
                saver.setup()
                yield saver
        except Exception as exc:  # psycopg's errors; anything else is a bug and will show its traceback
            if exc.__class__.__module__.startswith("psycopg"):
                # named with the variable that set it: "connection failed: ..." alone left a user of two databases
                # guessing which one (hostile22 finding 12); no user, password or query in the name
                raise BackendError(
                    f"checkpoint database unavailable (EXECUTOR_CHECKPOINT_URL {display_url(url)}): "
                    f"{str(exc).splitlines()[0]}"
                ) from exc
            raise
        return
    if url:
        raise ConfigError(  # a setting to change, not a backend down: exit 2
            "EXECUTOR_CHECKPOINT_URL must be a postgresql:// URL (SQLite under EXECUTOR_HOME is the default)"
        )
    from langgraph.checkpoint.sqlite import SqliteSaver

    settings.ensure_home()
    path = settings.home / "checkpoints.sqlite"
    # SQLite reads only the pages a query touches: a damaged file would serve (and be written) as if whole
    damage = sqlite_damage(path)
    if damage is not None:
        raise DamagedError(
            f"the checkpoint database {path} is damaged ({damage}): restore it from a backup, or move it away "
            "(the sessions' conversations start over; what they retrieved stays in executor.db)",
            path,
        )
    path = private_file(path)
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        yield SqliteSaver(conn)
    except sqlite3.DatabaseError as exc:  # a damaged file, a full disk, a lock held too long
        raise BackendError(f"checkpoint database {path} unusable: {disk_full(path.parent, str(exc)) or exc}") from exc
    finally:
        conn.close()
