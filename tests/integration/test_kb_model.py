"""A KB's own grading model: `executor calibrate --labels F --kb K --write` stores it in K's catalog row, K's
lookups use it, every other KB keeps the shared preset, and a damaged model is one clear line."""

import json

import pytest
from conftest import run_cli
from doc_fixtures import write_kb
from sqlalchemy import create_engine, text

from executor.core.settings import RANKER_PRESETS, KbModel

PAGES = {
    "hooks.md": "# Chart Hooks\n\nHooks run a Job before install, after upgrade or before delete. Annotate the Job "
    "with `helm.sh/hook: pre-install`; the hook weight orders several hooks.\n",
    "rollback.md": "# Rolling back\n\nUse `helm rollback RELEASE REVISION` to return a release to an earlier "
    "revision. The values of that revision come back too.\n",
    "repositories.md": "# Chart repositories\n\nA repository is an HTTP server with an index.yaml. Add it with "
    "`helm repo add` and refresh it with `helm repo update`.\n",
    "values.md": "# Values files\n\nValues come from values.yaml, from -f files and from --set on the command "
    "line. Later files override earlier ones.\n",
    "tests.md": "# Chart tests\n\nA test is a Pod with the `helm.sh/hook: test` annotation; `helm test RELEASE` "
    "runs it after the install and reports whether it succeeded.\n",
    "install.md": "# Installing the client\n\nDownload a release binary, or use a package manager: brew install "
    "helm, choco install kubernetes-helm, winget install Helm.Helm.\n",
}
LABELS = [
    ("What runs before install when a Job has the pre-install hook annotation?", ["hooks.md"]),
    ("In what order do several hooks run?", ["hooks.md"]),
    ("How do I go back to an earlier revision of a release?", ["rollback.md"]),
    ("Does a rollback restore the old values?", ["rollback.md"]),
    ("How do I add a chart repository?", ["repositories.md"]),
    ("What file does a chart repository serve?", ["repositories.md"]),
    ("Which values win when I pass several -f files?", ["values.md"]),
    ("How do I set one value on the command line?", ["values.md"]),
    ("How do I check that a release works after installing it?", ["tests.md"]),
    ("How do I install the helm client on Windows?", ["install.md"]),
    ("Can I install helm with brew?", ["install.md"]),
    ("How do I bake sourdough bread?", []),
    ("What is the capital of Australia?", []),
]
QUERY = "How do I go back to an earlier revision of a release?"


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    root = write_kb(tmp_path_factory.mktemp("docs"), PAGES)
    home = tmp_path_factory.mktemp("home")
    for kb in ("docs", "other"):
        # without self-calibration, so that "other" keeps the shared preset (tests/integration/test_self_calibration.py
        # covers the model an ingest fits)
        r = run_cli(home, "ingest", str(root), "--kb", kb, EXECUTOR_SELF_CALIBRATE="false")
        assert r.returncode == 0, r.stderr
    return home


def _model(home, kb: str):
    """The KB's stored model, read from the catalog file (no runtime: a Lite file allows one process)."""
    with create_engine(f"sqlite:///{home / 'executor.db'}").connect() as conn:
        raw = conn.execute(text("select grading_model from knowledge_base where name = :n"), {"n": kb}).scalar()
    return json.loads(raw) if raw is not None else None


def _thresholds(home, kb: str) -> dict:
    """The thresholds a real `executor lookup` in this KB graded with (its tool_invocation row keeps them)."""
    out = run_cli(home, "lookup", QUERY, "--kb", kb, "--no-graph")
    assert out.returncode == 0, out.stderr
    with create_engine(f"sqlite:///{home / 'executor.db'}").connect() as conn:
        raw = conn.execute(
            text(
                "select retrieval_details from tool_invocation where kb = :kb and tool_name = "
                "'lookup_knowledge' order by id desc limit 1"
            ),
            {"kb": kb},
        ).scalar()
    return json.loads(raw)["thresholds"]


def _labels(tmp_path):
    path = tmp_path / "labels.yaml"
    path.write_text(
        "".join(f"- {{query: {json.dumps(q)}, relevant: {json.dumps(r)}}}\n" for q, r in LABELS), encoding="utf-8"
    )
    return path


def test_the_model_written_for_one_kb_grades_that_kb_only(home, tmp_path):
    config = tmp_path / "config.yaml"  # --write for a KB never touches config.yaml (the shared preset's place)
    config.write_text("", encoding="utf-8")  # EXECUTOR_CONFIG must name a file that exists
    out = run_cli(
        home,
        "calibrate",
        "--labels",
        str(_labels(tmp_path)),
        "--kb",
        "docs",
        "--write",
        "--json",
        EXECUTOR_CONFIG=str(config),
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["target"] == "docs" and "catalog" in result["written_to"]
    assert result["held_out"]["by_kb"]["docs"]["all"]["questions"] == len(LABELS)  # k-fold figures on its questions
    assert config.read_text(encoding="utf-8") == ""

    stored = KbModel.model_validate(_model(home, "docs"))
    assert _model(home, "other") is None
    # the labels go on top of the KB's own evidence: its generated questions and the off-topic pool add training pairs
    assert stored.embedder == result["embedder"] and stored.labels[str(_labels(tmp_path))] == len(LABELS)
    assert stored.labels["generated from docs's documents"] > 0 and stored.labels["bundled off-topic pool"] > 0
    assert stored.calibrated_by == "labels"
    assert stored.thresholds.ranker.model_dump() == result["ranker"]
    # two off-topic labels: "nothing found" is decided by an answerability model, stored with the ranker
    assert result["answerability"] is not None
    assert stored.thresholds.answerability.model_dump() == result["answerability"]
    assert _thresholds(home, "docs") == stored.thresholds.model_dump()
    assert _thresholds(home, "other") == RANKER_PRESETS[result["embedder"]].model_dump()
    shown = json.loads(run_cli(home, "kb", "show", "docs", "--json").stdout)["grading_model"]
    assert shown["embedder"] == result["embedder"] and shown["labels"] == stored.labels
    assert shown["held_out"]["questions"] == len(LABELS) and shown["answerability"] is True
    assert json.loads(run_cli(home, "kb", "show", "other", "--json").stdout)["grading_model"] is None
    # the lookup applies it: an off-topic question it was placed on finds nothing in this KB
    off = run_cli(home, "lookup", "How do I bake sourdough bread?", "--kb", "docs", "--no-graph", "--json")
    assert off.returncode == 0, off.stderr
    found = json.loads(off.stdout)
    assert found["found"] is False and found["relevance_level"] == "NONE" and found["primary"] == []


def test_a_damaged_model_is_one_line_and_other_kbs_still_work(home, tmp_path):
    damaged = json.dumps({"embedder": "use-multilingual-v3", "thresholds": {"reference_threshold": 7}})
    with create_engine(f"sqlite:///{home / 'executor.db'}").begin() as conn:
        conn.execute(text("update knowledge_base set grading_model = :m where name = 'docs'"), {"m": damaged})
    bad = run_cli(home, "lookup", QUERY, "--kb", "docs")
    assert bad.returncode == 2
    assert bad.stderr.strip().count("\n") == 0
    assert "knowledge base 'docs': its stored grading model is invalid" in bad.stderr
    assert run_cli(home, "lookup", QUERY, "--kb", "other").returncode == 0

    reset = run_cli(home, "calibrate", "--reset", "--kb", "docs")
    assert reset.returncode == 0, reset.stderr
    assert _model(home, "docs") is None
    assert _thresholds(home, "docs") == _thresholds(home, "other")  # back to the shared preset


def test_a_kb_graded_by_similarity_gets_no_model_and_bad_options_are_one_line(home, tmp_path):
    labels = str(_labels(tmp_path))
    (tmp_path / "config.yaml").write_text("")  # named but missing is an error of its own
    refused = run_cli(
        home,
        "calibrate",
        "--labels",
        labels,
        "--kb",
        "docs",
        "--write",
        EXECUTOR_GRADING="similarity",
        EXECUTOR_CONFIG=str(tmp_path / "config.yaml"),
    )
    assert refused.returncode == 2 and refused.stderr.strip().count("\n") == 0
    assert "graded by similarity" in refused.stderr
    for args in (
        ("calibrate", "--reset"),
        ("calibrate", "--reset", "--kb", "docs", "--labels", labels),
        ("calibrate", "--labels", labels, "--kb", "docs", "--for", "other"),
    ):
        r = run_cli(home, *args)
        assert r.returncode == 2 and r.stderr.strip().count("\n") == 0, (args, r.stderr)
