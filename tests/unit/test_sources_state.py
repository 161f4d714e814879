"""What a re-ingest records of each file and when it trusts it (executor/retrieval/sources.py)."""

import os
import time

from executor.retrieval.sources import Known, load_documents

HOUR_AGO = time.time() - 3600


def write(root, name, text, when=None):
    path = root / name
    path.write_text(text, encoding="utf-8")
    if when is not None:
        os.utime(path, (when, when))
    return path


def test_a_fresh_mtime_is_not_trusted_an_old_one_is(tmp_path):
    write(tmp_path, "old.md", "# Old\n\ntext", when=HOUR_AGO)
    write(tmp_path, "new.md", "# New\n\ntext")  # modified just now: a write in the same clock tick would keep its mtime
    loaded = load_documents(tmp_path)
    assert loaded.states["old.md"].file_stat is not None
    assert loaded.states["new.md"].file_stat is None
    assert loaded.order == ["new.md", "old.md"] and not loaded.unchanged


def test_known_files_are_skipped_by_state_or_by_hash(tmp_path):
    write(tmp_path, "a.md", "# A\n\nalpha", when=HOUR_AGO)
    write(tmp_path, "b.md", "# B\n\nbeta", when=HOUR_AGO)
    write(tmp_path, "c.md", "# C\n\ngamma", when=HOUR_AGO)
    first = load_documents(tmp_path)
    known = {k: Known(s.file_stat, s.file_hash) for k, s in first.states.items()}

    os.utime(tmp_path / "b.md", (HOUR_AGO + 5, HOUR_AGO + 5))  # touched: same bytes
    write(tmp_path, "c.md", "# C\n\nGAMMA", when=HOUR_AGO)  # same size, same mtime, other bytes (ctime moved)
    again = load_documents(tmp_path, known=known)
    assert again.unchanged == {"a.md", "b.md"}
    assert [d.doc_key for d in again.documents] == ["c.md"]
    assert set(again.states) == {"b.md", "c.md"}  # a.md was not opened: nothing new to record
    assert again.states["b.md"].file_hash == first.states["b.md"].file_hash
    assert again.states["b.md"].file_stat != first.states["b.md"].file_stat
    assert again.formats == {"md": 3} and again.order == ["a.md", "b.md", "c.md"]
    assert again.bytes_read == (tmp_path / "b.md").stat().st_size + (tmp_path / "c.md").stat().st_size


def test_a_new_parser_version_reads_every_file_again(tmp_path, monkeypatch):
    import executor.retrieval.documents as documents

    write(tmp_path, "a.md", "# A\n\nalpha", when=HOUR_AGO)
    first = load_documents(tmp_path)
    known = {k: Known(s.file_stat, s.file_hash) for k, s in first.states.items()}
    monkeypatch.setattr(documents, "PARSER_VERSION", "next")
    again = load_documents(tmp_path, known=known)
    assert [d.doc_key for d in again.documents] == ["a.md"] and not again.unchanged
