"""Which version of each knowledge base a Milvus Lite file's vectors were written at.

The catalog lives in the application database, which several homes may share (`EXECUTOR_DATABASE_URL` naming a
team's PostgreSQL), while each home keeps its own Lite file. When another home ingests a KB, the shared catalog
records the new text and this home's vectors keep the old one: a lookup here answered the old text as the KB's
current page, and this home's ingest found every page "unchanged" and never re-embedded it (hostile24b finding 1).
So each ingest notes, in a small file beside the Lite file, the catalog version (`catalog.version`) its vectors
were written at; the catalog compares it with its own before a KB is searched, and an ingest that finds them apart
re-embeds the KB. A Milvus server is shared by every home that names it, so its vectors follow the catalog: no
file is kept for it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from executor.core.fs import private_file

SUFFIX = ".versions.json"


def sidecar(lite_file: str | Path) -> Path:
    lite = Path(lite_file)
    return lite.with_name(lite.name + SUFFIX)


def written(lite_file: str | Path, kb: str) -> str | None:
    """The catalog version `kb`'s vectors in this Lite file were written at; None when none was noted (a home from
    before the file, or a file that cannot be read: nothing is refused on its account)."""
    try:
        data = json.loads(sidecar(lite_file).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = data.get(kb) if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def note(lite_file: str | Path, kb: str, version: str | None) -> None:
    """Note `kb`'s version (None: forget the KB), replacing the file whole so a reader never sees half of it."""
    path = sidecar(lite_file)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    if version is None:
        data.pop(kb, None)
    else:
        data[kb] = version
    tmp = private_file(path.with_name(path.name + ".tmp"))
    tmp.write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)
