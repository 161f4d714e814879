"""Round twenty-one of the hostile pass (issue 30): the findings the lead mended (8, 10, 11), through the command
line on a home of its own. The findings are in evals/review/hostile21-findings.md."""

import json
import stat

from conftest import copy_of, free_port, last_error_line, run_cli
from test_hostile21 import team_home  # noqa: F401 (a fixture)


def test_kb_list_shows_a_kb_whose_vectors_are_gone(team_home, tmp_path):  # noqa: F811
    """Finding 8: `kb list` said "menus: 3 documents, no graph" for a KB with no vectors, as for a healthy one."""
    home = copy_of(team_home[0], tmp_path)
    (home / "milvus.db").unlink()
    r = run_cli(home, "kb", "list")
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("menus:"))
    assert "0 stored in the vector store" in line, line
    healthy = run_cli(team_home[0], "kb", "list")
    assert "stored in the vector store" not in healthy.stdout, healthy.stdout


def test_eval_of_a_named_pipe_says_so(tmp_path):
    """Finding 10: `executor eval FIFO` waited on the pipe until killed; `--labels FIFO` already said what it is."""
    import os

    fifo = tmp_path / "scenarios.yaml"
    os.mkfifo(fifo)
    r = run_cli(tmp_path / "home", "eval", str(fifo), timeout=120)
    assert r.returncode == 2, r.stderr
    assert "named pipe (FIFO), not a regular file" in last_error_line(r, 2), r.stderr


def test_a_database_folder_executor_creates_is_private(team_home, tmp_path):  # noqa: F811
    """Finding 11: a SQLite URL in a folder that does not exist created it 0755 (the umask's); the home's folders
    are 0700 and its files 0600."""
    home = copy_of(team_home[0], tmp_path)
    folder = tmp_path / "typo" / "db"
    run_cli(home, "lookup", "canteen dish", "--kb", "menus", EXECUTOR_DATABASE_URL=f"sqlite:///{folder}/x.db")
    for made in (folder, folder.parent):
        assert stat.S_IMODE(made.stat().st_mode) == 0o700, oct(made.stat().st_mode)


def test_an_llm_endpoint_that_is_no_url_or_down_is_named(team_home, tmp_path):  # noqa: F811
    """Finding 7: `OPENAI_BASE_URL=notaurl` and an endpoint nobody listens on both said "the LLM is unavailable:
    OpenAIConnectionError: Connection error.", naming neither the variable nor the address."""
    home = copy_of(team_home[0], tmp_path)
    ask = ("ask", "what is on the menu", "--kb", "menus")
    line = last_error_line(run_cli(home, *ask, OPENAI_BASE_URL="notaurl", OPENAI_API_KEY="sk-x1"), 2)
    assert "OPENAI_BASE_URL" in line and "not an http(s) URL" in line, line
    down = "http://someone:s3cret-pass@127.0.0.1:1/v1"  # credentials in the URL are never printed
    r = run_cli(home, *ask, OPENAI_BASE_URL=down, OPENAI_API_KEY="sk-x1", EXECUTOR_LLM_TIMEOUT_S="5")
    line = last_error_line(r, 1)
    assert "the LLM is unavailable at http://" in line and "127.0.0.1:1/v1" in line, line
    assert "s3cret-pass" not in r.stdout + r.stderr, r.stderr


def test_llm_serve_of_a_model_file_llama_cpp_cannot_load_says_only_that(tmp_path):
    """Finding 16: `llm serve` on a broken .gguf printed "serving … Ctrl-C stops" before llama.cpp failed to load
    it; the line now waits for the server to start."""
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + bytes(range(256)) * 400)  # the magic, then what no model is
    r = run_cli(tmp_path / "home", "llm", "serve", "--model", str(bad), "--port", str(free_port()), timeout=120)
    line = last_error_line(r, 1)
    assert "could not start llama.cpp" in line, line
    assert "serving" not in r.stdout + r.stderr, r.stdout


def test_llm_extraction_stops_at_an_endpoint_that_never_answers(tmp_path):
    """Finding 17: with an LLM endpoint that accepts and never answers, every page of the ingest asked it again
    (two attempts at the timeout each: ~2 minutes a page at the default 60 s). The first timeout stops LLM
    extraction for the ingest, one warning naming OPENAI_BASE_URL; the rule-based graph is built."""
    from conftest import write_pages
    from test_hostile18b import silent_server

    home = tmp_path / "home"
    assert run_cli(home, "kb", "create", "gy", "--entities", "Software").returncode == 0
    pages = {f"menu{i}.md": f"# Menu {i}\n\nThe canteen runs PostgreSQL and Redis for menu {i}.\n" for i in range(5)}
    folder = write_pages(tmp_path / "docs", pages)
    with silent_server() as port:
        env = dict(OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1", OPENAI_API_KEY="sk-x1", EXECUTOR_LLM_TIMEOUT_S="2")
        r = run_cli(home, "ingest", str(folder), "--kb", "gy", timeout=170, **env)
    assert r.returncode == 0, r.stderr
    said = " ".join((r.stdout + r.stderr).split())  # a long warning is wrapped to the terminal's width
    assert said.count("did not answer") == 1 and "LLM extraction failed" not in said, said
    assert "LLM extraction stopped for this ingest" in said and "OPENAI_BASE_URL" in said, said
    shown = run_cli(home, "kb", "show", "gy", "--json")
    assert json.loads(shown.stdout)["graph"]["entities"] > 0, shown.stdout


def test_calibrate_reset_of_a_kb_with_no_own_model_says_so(team_home, tmp_path):  # noqa: F811
    """Finding 12: `calibrate --reset` said "own grading model dropped; it is graded by the shared preset" of a KB
    that had no model (and of one graded by similarity)."""
    home = copy_of(team_home[0], tmp_path)
    assert run_cli(home, "calibrate", "--reset", "--kb", "menus").returncode == 0  # its self-calibrated model, if any
    again = run_cli(home, "calibrate", "--reset", "--kb", "menus")
    assert again.returncode == 0, again.stderr
    assert "has no own grading model; nothing to drop" in again.stdout, again.stdout


def test_the_wording_of_three_refusals_is_the_users(tmp_path):
    """Finding 13, in part: an empty `--html` suggested "report.md" for an HTML page; `--kb ','` said pydantic's
    "List should have at least 1 item after validation, not 0"; `EXECUTOR_LOCAL_MODEL=BUNDLED` was a file not
    found (the keyword is `bundled`)."""
    home = tmp_path / "home"
    line = last_error_line(run_cli(home, "kg", "Redis", "--html", ""), 2)
    assert "e.g. graph.html" in line, line
    line = last_error_line(run_cli(home, "kg", "Redis", "--kb", ","), 2)
    assert "--kb names no knowledge base" in line and "List should" not in line, line
    from executor.local_llm.model_file import bundled_model_path, resolve_model

    assert resolve_model("BUNDLED") == resolve_model(" bundled ") == bundled_model_path()


def test_an_ingest_that_never_accounted_for_what_it_moved_makes_the_next_refit(tmp_path):
    """Finding 9: an ingest killed during its self-calibration (its documents recorded, the model not refitted)
    left the KB with a model fitted on documents it no longer had, and the next ingest, moving nothing, never
    refitted. Here the ingest that does not account for itself is one run with self-calibration off."""
    from test_self_calibration import PAGES, write_kb

    home, folder = tmp_path / "home", write_kb(tmp_path / "docs", PAGES)

    def ingest(**env) -> dict:
        r = run_cli(home, "ingest", str(folder), "--kb", "team", "--json", **env)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    assert ingest()["calibration"]["stored"]
    assert ingest()["calibration"] is None  # nothing moved, the model accounted for: no refit
    (folder / "extra.md").write_text("# Extra\n\nA page the next ingest adds.\n")
    ingest(EXECUTOR_SELF_CALIBRATE="false")  # it moved a document and never said so to the model
    again = ingest()  # moves nothing itself
    assert again["calibration"] is not None and again["calibration"]["stored"], again["calibration"]
