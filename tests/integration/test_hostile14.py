"""Round fourteen of the hostile pass (issue 30): the command line's input, its configuration and ingest, probed
as a new user would. Each test failed on the code before its fix:

- on MySQL/MariaDB (their default collation ignores case and accents) the sessions "Alice" and "alice" shared one
  action memory, so the second was told DEDUPED for documents its host never got, and the pages `A.md` and `a.md`
  were one catalog row while the vector store held both;
- a label file's misspelt key (`relevent:`) left the question with no relevant document, which `eval-retrieval`
  measured and `calibrate` fitted as an off-topic question, without a word; a label question a lookup refuses
  (blank, control characters, over the length limit) was graded anyway and counted as "nothing found";
"""

import json

import pytest
from conftest import fresh_database, last_error_line, run_cli

from executor.retrieval.repeat_calibration import load_repeat_labels
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


# -- label files -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["eval-retrieval", "calibrate"])
def test_a_misspelt_label_key_is_named_not_taken_for_an_off_topic_question(tmp_path, command):
    labels = tmp_path / "labels.yaml"
    labels.write_text(
        '- query: "How do we version our public API?"\n  relevent: [api/api-versioning.md]\n'
        '- query: "How do clients refresh a token?"\n  relevant: [api/authentication.md]\n',
        encoding="utf-8",
    )
    line = last_error_line(run_cli(tmp_path / "home", command, "--labels", str(labels)), 2)
    assert f"{labels}: entry 1: unknown key 'relevent'; did you mean 'relevant'?" in line, line


def test_a_note_in_a_repeat_label_file_is_still_read(tmp_path):
    labels = tmp_path / "repeats.yaml"
    labels.write_text("- {earlier: vacation days, later: paid time off, label: repeat, miss: true}\n", "utf-8")
    assert [(p.earlier, p.later) for p in load_repeat_labels(labels)] == [("vacation days", "paid time off")]


@pytest.mark.parametrize(
    ("query", "problem"),
    [('"   "', "is empty"), ('"a\\x1bb"', "contains control characters"), ("a" * 2001, "is 2,001 characters long")],
    ids=["blank", "control", "too-long"],
)
def test_a_label_question_a_lookup_refuses_is_named_not_graded(tmp_path, query, problem):
    labels = tmp_path / "labels.yaml"
    labels.write_text(f"- query: x\n  relevant: []\n- query: {query}\n  relevant: [a.md]\n", encoding="utf-8")
    line = last_error_line(run_cli(tmp_path / "home", "eval-retrieval", "--labels", str(labels)), 2)
    assert f"{labels}: entry 2 (query): the text {problem}" in line, line
    pairs = tmp_path / "repeats.yaml"
    pairs.write_text(f"- earlier: {query}\n  later: x\n  label: repeat\n", encoding="utf-8")
    line = last_error_line(run_cli(tmp_path / "home", "calibrate-repeats", "--labels", str(pairs)), 2)
    assert f"{pairs}: entry 1 (earlier): the text {problem}" in line, line
