"""The catalog's cached views: a KB row read once per tool call, documents read again only after an ingest."""

from sqlalchemy import event

from executor.stores.catalog import Catalog, DocumentChange
from executor.stores.database import Database


def change(doc_key: str, title: str) -> DocumentChange:
    return DocumentChange(
        doc_key=doc_key,
        title=title,
        domain="ops",
        keywords=[],
        error_codes=[],
        entities=[],
        relations=[],
        content_hash=title,
        chunk_count=1,
    )


def counted(db: Database) -> list[str]:
    statements: list[str] = []
    event.listen(db.engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    return statements


def test_documents_are_read_again_only_when_an_ingest_moved_the_revision(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'executor.db'}")
    catalog, other_process = Catalog(db), Catalog(db)
    catalog.create("ops")
    other_process.apply_ingest("ops", [change("a.md", "A")], [], "use", 512, "docs")
    statements = counted(db)

    assert [d.title for d in catalog.documents("ops").values()] == ["A"]
    reads = len(statements)
    assert catalog.documents("ops").keys() == {"a.md"}
    assert len(statements) - reads == 1  # the KB row only: the documents came from the cached view

    other_process.apply_ingest("ops", [change("b.md", "B")], ["a.md"], "use", 512, "docs")  # another process ingests
    assert [d.title for d in catalog.documents("ops").values()] == ["B"]


def test_a_view_is_not_shared_with_the_caller(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'executor.db'}")
    catalog = Catalog(db)
    catalog.create("ops")
    catalog.apply_ingest("ops", [change("a.md", "A")], [], "use", 512, "docs")
    catalog.documents("ops").clear()
    assert catalog.documents("ops").keys() == {"a.md"}


def test_inside_reading_a_kb_row_is_read_once(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'executor.db'}")
    catalog = Catalog(db)
    catalog.create("ops")
    statements = counted(db)
    with catalog.reading():
        rows = [catalog.require("ops"), catalog.get("ops"), catalog.require("ops")]
        with catalog.reading():  # a nested block (an expansion inside a tool call) shares the outer rows
            rows.append(catalog.get("ops"))
        assert catalog.get("nope") is None and catalog.get("nope") is None
    assert len({id(r) for r in rows}) == 1
    assert len(statements) == 2  # "ops" once, "nope" once
    catalog.get("ops")
    assert len(statements) == 3  # outside the block every read goes to the database


def test_rows_read_on_another_thread_are_not_read_again(tmp_path):
    """query_knowledge_graph reads each KB row once and hands it to that KB's worker thread."""
    import threading

    db = Database(f"sqlite:///{tmp_path / 'executor.db'}")
    catalog = Catalog(db)
    catalog.create("ops")
    row = catalog.require("ops")
    statements = counted(db)
    seen = []

    def worker():
        with catalog.reading({"ops": row}):
            seen.extend([catalog.require("ops"), catalog.get("ops")])
            with catalog.reading({"ops": None}):  # a nested block keeps the rows it has
                seen.append(catalog.get("ops"))

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen == [row, row, row] and statements == []
