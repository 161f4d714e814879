"""Round fourteen of the hostile pass (issue 30): the command line's input, its configuration and ingest, probed
as a new user would. Each test failed on the code before its fix:

- on MySQL/MariaDB (their default collation ignores case and accents) the sessions "Alice" and "alice" shared one
  action memory, so the second was told DEDUPED for documents its host never got, and the pages `A.md` and `a.md`
  were one catalog row while the vector store held both;
- a label file's misspelt key (`relevent:`) left the question with no relevant document, which `eval-retrieval`
  measured and `calibrate` fitted as an off-topic question, without a word; a label question a lookup refuses
  (blank, control characters, over the length limit) was graded anyway and counted as "nothing found"; a question
  asked twice (in one file, or the same file given twice) counted twice and leaked across calibration's folds, and
  with opposite labels said nothing;
- a `config.yaml` key in another case (`TOP_K:`, `HOME:`, `DATABASE_URL:`) passed the unknown-key check and was then
  dropped without a word; a key given twice kept the last silently; a variable set through its second spelling
  (`EXECUTOR_MILVUS_URI`) was named by its first (`MILVUS_URI`, which nobody set); `EXECUTOR_CONFIG=` (empty) was
  ".: is a folder" instead of unset, as every other empty variable is; an in-memory SQLite database
  (`sqlite://`, `sqlite:///:memory:`) was taken, so an ingest "succeeded" and no later command knew its KB;
- a query of invisible characters alone (a zero-width space, a BOM, joiners) was looked up and answered "nothing
  relevant in the knowledge base", exit 0, to a question nobody could see;
- a page named with its accents written apart (NFD: macOS, files copied from it), in Hindi (`हिंदी.md`: vowel signs
  are combining marks) or in Persian (a zero-width non-joiner inside a word) was skipped as a name of forbidden
  characters; two files whose names differ only in that (`café.md` composed and not) are one document key, so one is
  read and the other named; a skipped name's right-to-left override or zero-width space was printed as it is; a
  page starting with a second byte order mark had its front matter ignored and its title read "\ufeff---title: ...";
- an ingest of another folder into a KB (a typo, a subfolder) removed every document the KB's own folder held with
  no word but "N removed": it says which folder the KB came from and how to bring them back;
- `calibrate --write` and `calibrate-repeats --write` replaced a config.yaml its owner kept 0600 (it holds an API
  key) by a file the umask made, 0644, readable by every user, and replaced a symbolic link to it by a file;
"""

import json
import stat
import unicodedata

import pytest
from conftest import fresh_database, ingested_home, last_error_line, run_cli, write_pages

from executor.retrieval.documents import parse_text
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
        pages = {
            "A.md": "# Kettles\nThe kettle shows error K300 when it boils dry.\n",
            "a.md": "# Toasters\nThe toaster shows error T400 when the crumb tray is full.\n",
            "cafe.md": "# Cafe\nThe grinder shows error G500 when the hopper is empty.\n",
            "café.md": "# Café\nThe frother shows error F600 when the wand is blocked.\n",
        }
        write_pages(folder, pages)
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
    ("command", "text"),
    [
        (
            "eval-retrieval",
            "- {query: How do clients get a token?, relevant: [api/authentication.md]}\n"
            "- {query: '  How do clients  get a token?', relevant: []}\n",
        ),
        ("calibrate", "- {query: a, relevant: []}\n- {query: b, relevant: []}\n- {query: a, relevant: []}\n"),
        (
            "calibrate-repeats",
            "- {earlier: disk full, later: out of space, label: repeat}\n"
            "- {earlier: disk full, later: out of  space, label: distinct}\n",
        ),
    ],
)
def test_a_label_question_asked_twice_is_named(tmp_path, command, text):
    labels = tmp_path / "labels.yaml"
    labels.write_text(text, encoding="utf-8")
    twice = "3 repeats the question of entry 1" if command == "calibrate" else "2 repeats the question of entry 1"
    line = last_error_line(run_cli(tmp_path / "home", command, "--labels", str(labels)), 2)
    assert f"{labels}: entry {twice}; keep one" in line, line


def test_a_label_file_given_twice_for_one_kb_is_named(tmp_path):
    labels = tmp_path / "labels.yaml"
    labels.write_text("- {query: How do clients get a token?, relevant: [api/authentication.md]}\n", "utf-8")
    again = tmp_path / "sub" / ".." / "labels.yaml"
    (tmp_path / "sub").mkdir()
    line = last_error_line(
        run_cli(tmp_path / "home", "eval-retrieval", "--labels", str(labels), "--labels", str(again)), 2
    )
    assert f"--labels {again} is given twice for knowledge base 'sample'; give it once" in line, line


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


# -- configuration -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("key", ["TOP_K", "Top_K"])
def test_a_config_key_in_another_case_is_read_not_dropped(tmp_path, key):
    config = tmp_path / "config.yaml"
    config.write_text(f"{key}: 0\n", encoding="utf-8")
    line = last_error_line(run_cli(tmp_path / "home", "kb", "list", EXECUTOR_CONFIG=str(config)), 2)
    assert f"invalid setting {config} (top_k): Input should be greater than or equal to 1" in line, line


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("top_k: 5\ntop_k: 50\n", "'top_k' is given twice"),
        (
            "retrieval:\n  normalization:\n    reference-threshold: 0.3\n    reference-threshold: 0.4\n",
            "'retrieval.normalization.reference-threshold' is given twice",
        ),
        ("milvus_uri: /tmp/a.db\nMILVUS_URI: /tmp/b.db\n", "'MILVUS_URI' and another key both set milvus_uri"),
    ],
    ids=["flat", "nested", "two-spellings"],
)
def test_a_config_key_given_twice_is_named(tmp_path, text, named):
    config = tmp_path / "config.yaml"
    config.write_text(text, encoding="utf-8")
    line = last_error_line(run_cli(tmp_path / "home", "kb", "list", EXECUTOR_CONFIG=str(config)), 2)
    assert f"{config}: {named}; keep one" in line, line


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("EXECUTOR_MILVUS_URI", "nope"),
        ("EXECUTOR_FALKORDB_URL", "http://127.0.0.1:6379"),
        ("EXECUTOR_OPENAI_BASE_URL", "http://h:99999"),
    ],
)
def test_a_setting_error_names_the_variable_as_it_was_set(tmp_path, variable, value):
    line = last_error_line(run_cli(tmp_path / "home", "kb", "list", **{variable: value}), 2)
    assert line.startswith(f"error: invalid setting {variable} ("), line


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:", "sqlite+pysqlite:///:memory:"])
def test_an_in_memory_database_is_a_bad_setting(tmp_path, url):
    line = last_error_line(run_cli(tmp_path / "home", "kb", "create", "notes", EXECUTOR_DATABASE_URL=url), 2)
    assert line.startswith("error: invalid setting EXECUTOR_DATABASE_URL (database_url): an in-memory SQLite"), line
    assert not (tmp_path / "home" / "milvus.db").exists()


def test_an_empty_executor_config_is_unset(tmp_path):
    r = run_cli(tmp_path / "home", "kb", "list", "--json", EXECUTOR_CONFIG="")
    assert r.returncode == 0 and json.loads(r.stdout) == [], (r.stdout, r.stderr)


# -- a query nobody can see ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sample_home(tmp_path_factory):
    return ingested_home(tmp_path_factory, "hostile14")


@pytest.mark.parametrize("command", ["lookup", "ask", "kg"])
def test_a_query_of_invisible_characters_is_empty(sample_home, command):
    r = run_cli(sample_home, command, "\u200b\ufeff \u2060", "--json")
    line = last_error_line(r, 2)
    assert "the query is empty: it holds only invisible characters" in line, line
    assert json.loads(r.stdout)["code"] == 2


# -- file names ----------------------------------------------------------------------------------------------------
def _names_folder(tmp_path):
    folder = tmp_path / "names"
    nfd, nfc = unicodedata.normalize("NFD", "café.md"), unicodedata.normalize("NFC", "café.md")
    pages = {
        unicodedata.normalize("NFD", "crème.md"): "# Crème\nThe milk frother shows error F200 when it clogs.\n",
        nfd: "# Café apart\nThe grinder shows error G100 when the burrs jam.\n",
        nfc: "# Café\nThe espresso machine shows error E100 when it needs descaling.\n",
        "हिंदी.md": "# हिंदी\nहिंदी पृष्ठ: त्रुटि H300 का अर्थ है कि डिस्क भरी हुई है।\n",
        "می\u200cخواهم.md": "# فارسی\nخطای P400 یعنی دیسک پر است.\n",
        "rtl\u202egnp.md": "# hidden\nA page whose name reorders itself.\n",
    }
    return write_pages(folder, pages), nfd, nfc


def test_names_of_every_script_are_read_under_their_composed_spelling(tmp_path):
    folder, nfd, nfc = _names_folder(tmp_path)
    plan = _json(run_cli(tmp_path / "home", "ingest", str(folder), "--kb", "names", "--dry-run", "--json"))
    keys = sorted(f["doc_key"] for f in plan["files"])
    assert keys == sorted([unicodedata.normalize("NFC", "crème.md"), nfc, "हिंदी.md", "می\u200cخواهم.md"]), plan
    skipped = {s["name"]: s["reason"] for s in plan["skipped"]}
    assert f"its name is {nfc}'s with the accents written apart (NFD)" in skipped[nfd], skipped
    assert "rtl\\u202egnp.md" in skipped, skipped  # shown, not obeyed


def test_a_page_named_apart_is_found_under_its_composed_name(tmp_path):
    folder, _, nfc = _names_folder(tmp_path)
    home = tmp_path / "home"
    done = _json(run_cli(home, "ingest", str(folder), "--kb", "names", "--no-llm-extract", "--json"))
    assert done["documents"] == 4, done
    for query, key in [("milk frother error F200", "crème.md"), ("espresso error E100", nfc), ("त्रुटि H300", "हिंदी.md")]:
        found = _json(run_cli(home, "lookup", query, "--kb", "names", "--json"))
        assert [d["doc_key"] for d in found["primary"]] == [unicodedata.normalize("NFC", key)], found


# -- another folder ingested into a KB -------------------------------------------------------------------------------
def test_another_folder_ingested_into_a_kb_says_what_it_removes(tmp_path):
    first, second = tmp_path / "docs", tmp_path / "docs" / "api"
    second.mkdir(parents=True)
    (first / "deploy.md").write_text("# Deploy\nRoll out with the blue-green switch D100.\n", encoding="utf-8")
    (first / "backup.md").write_text("# Backup\nSnapshots run nightly, error B200 when the disk is full.\n", "utf-8")
    (second / "auth.md").write_text("# Auth\nTokens expire after an hour, error A300.\n", encoding="utf-8")
    home = tmp_path / "home"
    done = _json(run_cli(home, "ingest", str(first), "--kb", "team", "--no-llm-extract", "--json"))
    assert done["documents"] == 3 and not any("last ingested" in w for w in done["warnings"]), done
    again = _json(run_cli(home, "ingest", str(second), "--kb", "team", "--no-llm-extract", "--json"))
    assert again["removed"] == 3, again
    said = [w for w in again["warnings"] if "last ingested" in w]
    assert said == [
        f"team was last ingested from {first}, not {second}: 3 of its documents are not in this folder and are "
        f"removed (ingest {first} again to bring them back)"
    ], again["warnings"]


# -- a config file written by --write ----------------------------------------------------------------------------
def test_write_keeps_the_config_files_mode_and_its_link(sample_home, tmp_path):
    real = tmp_path / "dotfiles" / "executor.yaml"
    real.parent.mkdir()
    real.write_text("openai_base_url: http://127.0.0.1:9/v1\nopenai_api_key: sk-kept-private-0123456789\n", "utf-8")
    real.chmod(0o600)
    link = tmp_path / "config.yaml"
    link.symlink_to(real)
    labels = tmp_path / "repeats.yaml"
    labels.write_text(
        "".join(
            f"- {{earlier: {a}, later: {b}, label: {label}}}\n"
            for a, b, label in [
                ("ERR_TIMEOUT 怎么处理", "ERR_TIMEOUT 是什么原因", "repeat"),
                ("数据库连接池怎么配置", "连接池大小设置多少合适", "repeat"),
                ("API 如何分页", "慢查询怎么排查", "distinct"),
                ("告警规则怎么写", "磁盘满了怎么办", "distinct"),
            ]
        ),
        encoding="utf-8",
    )
    r = run_cli(sample_home, "calibrate-repeats", "--labels", str(labels), "--write", EXECUTOR_CONFIG=str(link))
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and link.resolve() == real
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    assert "sk-kept-private-0123456789" in real.read_text("utf-8") and "overlap-threshold" in real.read_text("utf-8")
    assert sorted(p.name for p in real.parent.iterdir()) == ["executor.yaml"]  # no temporary file left


def test_front_matter_after_a_second_byte_order_mark_is_read():
    doc = parse_text("twice.md", "\ufeff---\ntitle: Deploy guide\nkeywords: [rollout]\n---\n# Steps\nRoll out.\n")
    assert (doc.title, doc.keywords, doc.warnings) == ("Deploy guide", ["rollout"], [])
