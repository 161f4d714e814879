"""A re-ingest reads only the files that changed: an unchanged file is not opened, a touched one is read but not
converted, one changed with its size and mtime kept is still seen (its ctime moved), removed files go."""

import os
import time

import pytest
from conftest import make_runtime
from doc_fixtures import write_kb

import executor.retrieval.sources as sources
from executor.retrieval.ingest import SAMPLE_EXTRACT_CONFIG, ingest

PAGES = {
    "ops/a.md": "---\nentities: [{name: Alpha, type: Software}]\n---\n# Alpha\n\nAlpha calls Beta on port 9000.",
    "ops/b.md": "# Beta\n\nBeta keeps the ledger; restart it with BetaCtl when ERR_LEDGER_FULL shows.",
    "ops/c.md": "---\ntitle: [not, text]\n---\n# Gamma\n\nGamma fronts Beta.",  # a front-matter warning
}
HOUR_AGO = time.time() - 3600


def age(root, *names, when=HOUR_AGO):
    """Files last modified long enough ago for their state to be trusted (a fresh mtime is "racy": read again)."""
    for name in names or [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()]:
        os.utime(root / name, (when, when))


@pytest.fixture
def spy(monkeypatch):
    """Which files an ingest opens, and which of them it parses."""
    seen = {"read": [], "parsed": []}
    read, parse = sources.read_regular_file, sources.parse_source

    def reading(path, max_bytes):
        seen["read"].append(path.name)
        return read(path, max_bytes)

    def parsing(source, data, limits, converter=None):
        seen["parsed"].append(source.path.name)
        return parse(source, data, limits, converter)

    monkeypatch.setattr(sources, "read_regular_file", reading)
    monkeypatch.setattr(sources, "parse_source", parsing)

    def take():
        out = {k: sorted(v) for k, v in seen.items()}
        seen["read"].clear()
        seen["parsed"].clear()
        return out

    return take


def chunk_rows(rt, kb):
    # the KB's live collection, as every lookup finds it (a first ingest promotes a generation of its own)
    name = rt.vectors.collection_name(kb)
    rows = rt.vectors.client.query(name, filter="chunk_index >= 0", output_fields=["chunk_id", "text", "dense"])
    return {r["chunk_id"]: (r["text"], tuple(r["dense"])) for r in rows}


def test_unchanged_files_are_not_read_and_keep_their_rows(tmp_path, spy):
    kb_dir = write_kb(tmp_path / "kb", PAGES)
    age(kb_dir)
    rt = make_runtime(tmp_path / "home")
    try:
        first = ingest(rt, kb_dir, "inc", progress=False, extract_config=SAMPLE_EXTRACT_CONFIG)
        assert spy() == {"read": ["a.md", "b.md", "c.md"], "parsed": ["a.md", "b.md", "c.md"]}
        rows_before = chunk_rows(rt, "inc")
        docs_before = {k: (r.updated_at, r.content_hash) for k, r in rt.catalog.documents("inc").items()}

        again = ingest(rt, kb_dir, "inc", progress=False)
        assert spy() == {"read": [], "parsed": []}  # not one file opened
        assert (again.unchanged, again.changed, again.added, again.documents) == (3, 0, 0, 3)
        assert again.warnings == first.warnings and any("ops/c.md: front matter 'title'" in w for w in again.warnings)
        assert again.formats == first.formats == {"md": 3}

        write_kb(kb_dir, {"ops/b.md": PAGES["ops/b.md"].replace("ledger", "journal")})
        age(kb_dir, "ops/b.md", when=HOUR_AGO + 60)
        changed = ingest(rt, kb_dir, "inc", progress=False)
        assert spy() == {"read": ["b.md"], "parsed": ["b.md"]}
        assert (changed.unchanged, changed.changed) == (2, 1)
        rows_after = chunk_rows(rt, "inc")
        untouched = [k for k in rows_before if not k.startswith("ops/b.md#")]
        assert untouched and {k: rows_after[k] for k in untouched} == {k: rows_before[k] for k in untouched}
        assert any("journal" in text for k, (text, _) in rows_after.items() if k.startswith("ops/b.md#"))
        docs_after = {k: (r.updated_at, r.content_hash) for k, r in rt.catalog.documents("inc").items()}
        assert {k: docs_after[k] for k in ("ops/a.md", "ops/c.md")} == {
            k: docs_before[k] for k in ("ops/a.md", "ops/c.md")
        }
        assert docs_after["ops/b.md"] != docs_before["ops/b.md"]

        (kb_dir / "ops" / "a.md").unlink()
        removed = ingest(rt, kb_dir, "inc", progress=False)
        assert spy() == {"read": [], "parsed": []}
        assert (removed.removed, removed.documents, removed.unchanged) == (1, 2, 2)
        assert not any(k.startswith("ops/a.md#") for k in chunk_rows(rt, "inc"))
        assert "ops/a.md" not in rt.catalog.documents("inc")
        assert rt.graph.counts("inc")["documents"] == 2

        rebuilt = ingest(rt, kb_dir, "inc", rebuild=True, progress=False)
        assert spy()["parsed"] == ["b.md", "c.md"]  # --rebuild reads everything
        assert (rebuilt.added + rebuilt.changed, rebuilt.documents) == (2, 2)
    finally:
        rt.close()


def test_a_touched_file_is_read_not_converted_and_a_same_size_change_is_seen(tmp_path, spy):
    kb_dir = write_kb(tmp_path / "kb", PAGES)
    age(kb_dir)
    rt = make_runtime(tmp_path / "home")
    try:
        ingest(rt, kb_dir, "inc", progress=False)
        spy()

        age(kb_dir, "ops/a.md", when=HOUR_AGO + 60)  # touched: another mtime, the same bytes
        touched = ingest(rt, kb_dir, "inc", progress=False)
        assert spy() == {"read": ["a.md"], "parsed": []}  # hashed, found the same, not converted
        assert (touched.unchanged, touched.changed) == (3, 0)

        # the same size and the same mtime, other bytes (a restore that keeps times): the ctime still moved
        path = kb_dir / "ops" / "b.md"
        before = path.stat()
        path.write_text(PAGES["ops/b.md"].replace("ledger", "LEDGER"), encoding="utf-8")
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert (path.stat().st_size, path.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
        same_size = ingest(rt, kb_dir, "inc", progress=False)
        assert spy() == {"read": ["b.md"], "parsed": ["b.md"]}
        assert (same_size.changed, same_size.unchanged) == (1, 2)
        assert any("LEDGER" in text for text, _ in chunk_rows(rt, "inc").values())

        settled = ingest(rt, kb_dir, "inc", progress=False)
        assert spy() == {"read": [], "parsed": []}  # every new state recorded: nothing read
        assert settled.unchanged == 3
    finally:
        rt.close()


def test_a_catalog_without_file_states_reads_every_file_once(tmp_path, spy):
    """Rows written before the file state was kept (migration 0008 leaves them NULL) are read once, then not."""
    from sqlalchemy import update

    from executor.stores.database import DocumentRow

    kb_dir = write_kb(tmp_path / "kb", PAGES)
    age(kb_dir)
    rt = make_runtime(tmp_path / "home")
    try:
        ingest(rt, kb_dir, "inc", progress=False, extract_config=SAMPLE_EXTRACT_CONFIG)
        graph_before = rt.graph.counts("inc")
        with rt.catalog.db.session() as s:
            s.execute(update(DocumentRow).values(file_stat=None, file_hash=None, body=None, warnings=None))
        spy()
        upgraded = ingest(rt, kb_dir, "inc", progress=False)
        assert spy() == {"read": ["a.md", "b.md", "c.md"], "parsed": ["a.md", "b.md", "c.md"]}
        assert (upgraded.unchanged, upgraded.changed) == (3, 0)  # same content: nothing re-embedded
        write_kb(kb_dir, {"ops/c.md": PAGES["ops/c.md"] + "\nGamma also fronts Alpha."})
        age(kb_dir, "ops/c.md", when=HOUR_AGO + 60)
        ingest(rt, kb_dir, "inc", progress=False)
        assert spy() == {"read": ["c.md"], "parsed": ["c.md"]}  # the others come from the catalog now
        assert rt.graph.counts("inc")["documents"] == graph_before["documents"]
    finally:
        rt.close()


@pytest.mark.parametrize("kind", ["postgres", "mysql"])
def test_a_large_document_text_is_kept_whole_on_the_production_databases(kind):
    """The parsed text kept for the graph build fits a large page (MySQL's plain BLOB stops at 64 kB)."""
    import random

    from conftest import fresh_database

    from executor.stores.catalog import Catalog, DocumentChange, FileRefresh
    from executor.stores.database import Database

    rng = random.Random(3)
    body = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz 数据库连接池") for _ in range(300_000))  # ~150 kB zlib'd
    with fresh_database(kind) as url:
        catalog = Catalog(Database(url))
        catalog.create("big")
        change = DocumentChange(
            doc_key="big.md",
            title="Big",
            domain="ops",
            keywords=[],
            error_codes=[],
            entities=[],
            relations=[],
            content_hash="h",
            chunk_count=1,
            file_stat="2:1:2:3",
            file_hash="f",
            body=body,
            warnings=["one"],
        )
        catalog.apply_ingest("big", [change], [], "use", 512, "docs")
        assert catalog.stored_bodies("big", {"big.md"}) == {"big.md": body}
        catalog.apply_ingest("big", [], [], "use", 512, "docs", refreshed=[FileRefresh("big.md", None, "g")])
        record = catalog.file_records("big")["big.md"]
        assert (record.file_stat, record.file_hash, record.has_body, record.warnings) == (None, "g", True, ["one"])
        catalog.db.engine.dispose()
