"""Is a SQLite file (the application database, a Milvus Lite file) whole? Checked when it is opened, so that a
damaged file is reported as damaged, never read as an empty or unknown knowledge base."""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
from pathlib import Path

from executor.core.errors import BackendError

SQLITE_HEADER = b"SQLite format 3\x00"
DISK_FULL_BYTES = 4 << 20  # less free than this where SQLite reported an I/O error: the disk is full


def disk_full(folder: Path, said: str) -> str | None:
    """ "the disk is full (N kB free under FOLDER); free some space" when SQLite's error (`said`) came from a full
    disk (it often says only "disk I/O error"), else None."""
    if "disk I/O error" not in said and "disk is full" not in said:
        return None
    free = shutil.disk_usage(folder).free
    if free >= DISK_FULL_BYTES:
        return None
    return f"the disk is full ({free // 1024} kB free under {folder}); free some space"


def sqlite_damage(path: Path) -> str | None:
    """Why the SQLite file at `path` is damaged (one line), or None when it is whole or missing. A file this
    user may not read is no damage: BackendError says so.

    `PRAGMA quick_check` reads every page and checks the b-trees (not the indexes' contents): a few ms for
    the files a home holds, and it finds a truncated file or overwritten pages, which SQLite itself reports
    only when a query happens to touch them (and a missing table then reads as "no rows")."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            header = fh.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        return "it is a folder, not a file"
    except PermissionError as exc:  # its mode or owner, not its bytes: moving it away would mend nothing
        raise BackendError(f"cannot read {path}: {exc.strerror}; give this user read and write access to it") from exc
    except OSError as exc:
        return f"it cannot be read ({exc.strerror})"
    _refuse_read_only(path)
    if not header:
        return None  # an empty file: the caller decides whether that is new or damaged
    if header != SQLITE_HEADER:
        return "it is not a SQLite file"
    try:
        rows = _read_only(path, "PRAGMA quick_check(1)", timeout=15)
    except sqlite3.OperationalError as exc:
        # locked or busy (another process writing), or not openable (permissions): not damage; the real open
        # that follows says what it is
        return str(exc) if "malformed" in str(exc) or "not a database" in str(exc) else None
    except sqlite3.DatabaseError as exc:
        return str(exc)
    said = rows[0][0] if rows else "no answer to an integrity check"
    return None if said == "ok" else " ".join(str(said).replace("*** in database main ***", "").split())


def read_only_mount(path: Path) -> bool:
    """Whether `path` is on a file system mounted read-only (hostile24b finding 7: told to chmod a 0600 file)."""
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _refuse_read_only(path: Path) -> None:
    """A file made read-only (chmod 0444) is refused before anything opens it: the check's read-only connection
    left a 0444 `-shm` and `-wal` beside it (SQLite in WAL mode gives them the file's mode and a reader cannot remove
    them), and then the file was silently made 0600 again (root may write it all the same)."""
    mode = path.stat().st_mode
    if read_only_mount(path):  # chmod changes nothing there (a snapshot, a container's `:ro` volume)
        raise BackendError(
            f"cannot write {path}: it is on a read-only file system and executor writes to it; mount it read-write, "
            "or copy the home to a writable place and set EXECUTOR_HOME to it"
        )
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(path, os.W_OK):
        raise BackendError(
            f"cannot write {path}: it is read-only (mode {stat.S_IMODE(mode):04o}) and executor writes to it; "
            f"give this user write access to it (chmod u+w {path})"
        )


def milvus_lite_collections(path: Path) -> list[str]:
    """The collections a Milvus Lite file holds (its own `collection_meta` table, read-only), [] when it holds
    none or cannot be read: a home whose database is gone but whose vectors are there lost its catalog."""
    path = Path(path)
    if not path.is_file() or path.stat().st_size == 0:
        return []
    try:
        rows = _read_only(path, "SELECT DISTINCT collection_name FROM collection_meta", timeout=5)
    except sqlite3.Error:
        return []
    return sorted(str(r[0]) for r in rows)


def _read_only(path: Path, sql: str, timeout: float) -> list:
    """`sql`'s rows from the SQLite file at `path`, opened read-only (a check never writes what it checks)."""
    conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=timeout)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()
