"""Round fourteen of the hostile pass (issue 30): the command line's input, its configuration and ingest, probed
as a new user would. Each test failed on the code before its fix:

- on MySQL/MariaDB (their default collation ignores case and accents) the sessions "Alice" and "alice" shared one
  action memory, so the second was told DEDUPED for documents its host never got, and the pages `A.md` and `a.md`
  were one catalog row while the vector store held both;
"""

import json

from conftest import fresh_database, run_cli

from executor.stores.database import Database
from executor.stores.memory import ActionMemory, SentDocument


def _json(r) -> dict:
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


# -- MySQL / MariaDB compare keys byte for byte ------------------------------------------------------------
def test_mysql_keeps_sessions_and_pages_apart_that_differ_only_in_case_or_accents(tmp_path):
    with fresh_database("mysql") as url:
        db = Database(url)
        memory = ActionMemory(db)
        memory.record("Alice", "general", "PRECISE", [SentDocument("kb", "a.md", "general", "Lower")])
        assert memory.sent_documents("alice") == {}  # another session: nothing was sent to it
        assert memory.domain_levels("alice") == {}
        db.engine.dispose()

        folder = tmp_path / "pages"
        folder.mkdir()
        pages = {
            "A.md": "# Kettles\nThe kettle shows error K300 when it boils dry.\n",
            "a.md": "# Toasters\nThe toaster shows error T400 when the crumb tray is full.\n",
            "cafe.md": "# Cafe\nThe grinder shows error G500 when the hopper is empty.\n",
            "café.md": "# Café\nThe frother shows error F600 when the wand is blocked.\n",
        }
        for name, text in pages.items():
            (folder / name).write_text(text, encoding="utf-8")
        home, env = tmp_path / "home", {"EXECUTOR_DATABASE_URL": url}
        _json(run_cli(home, "ingest", str(folder), "--kb", "pages", "--no-llm-extract", "--json", **env))
        shown = _json(run_cli(home, "kb", "show", "pages", "--json", **env))
        assert shown["documents"] == 4, shown
        for name, query in [("A.md", "kettle error K300"), ("a.md", "toaster error T400"), ("café.md", "F600")]:
            found = _json(run_cli(home, "lookup", query, "--kb", "pages", "--session", "s-" + name, "--json", **env))
            assert [d["doc_key"] for d in found["primary"]] == [name], found
