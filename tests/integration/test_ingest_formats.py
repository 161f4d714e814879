"""Ingest of what teams have (HTML, PDF, Word, PowerPoint, Excel, text, MDX) and of what they should not feed it.

Real Milvus Lite and USE; every fixture is written here by the library people make such files with.
"""

import json
import os
import subprocess
import sys

import pytest
from conftest import REPO, make_runtime, run_cli
from doc_fixtures import HTML_PAGE, MDX_PAGE, write_kb

import executor.retrieval.documents as documents
from evals.doc_writers import (
    write_docx,
    write_encrypted_pdf,
    write_image_only_pdf,
    write_pdf,
    write_pptx,
    write_xlsx,
    write_zip_bomb_docx,
)
from executor.core.errors import InputError
from executor.retrieval.documents import parse_text
from executor.retrieval.ingest import ingest
from executor.retrieval.sources import SourceLimits, load_documents

# (doc_key, title, a question about its content)
FINDABLE = [
    (
        "wiki/payments-oncall.html",
        "Payment gateway on-call",
        "payment gateway returns 502, how do I fail over to the standby acquirer",
    ),
    ("manuals/frobnicator.pdf", "Frobnicator vendor manual", "how often does the frobnicator need calibration"),
    ("runbooks/key-rotation.docx", "Key rotation runbook", "re-encrypt sealed secrets after rotating the signing keys"),
    ("reviews/q3.pptx", "Quarterly review", "what is the p99 latency budget"),
    ("inventory/ports.xlsx", "ports", "which port does grafana listen on"),
    ("notes/oncall-notes.txt", "oncall-notes", "who owns the billing cron job"),
    ("docs/widget-operator.mdx", "Installing the widget operator", "install the widget operator with helm"),
]


def build_team_folder(root):
    write_kb(
        root,
        {
            "wiki/payments-oncall.html": HTML_PAGE,
            "notes/oncall-notes.txt": "Billing cron job\n\nThe billing cron job is owned by the finance-platform team; "
            "it runs nightly at 02:00 UTC.\n",
            "docs/widget-operator.mdx": MDX_PAGE,
        },
    )
    write_pdf(
        root / "manuals/frobnicator.pdf",
        "Frobnicator vendor manual",
        [
            (
                "Maintenance",
                ["The frobnicator needs calibration every 90 days.", "Use calibration kit FX-200 and log the result."],
            )
        ],
    )
    write_docx(
        root / "runbooks/key-rotation.docx",
        "Key rotation runbook",
        [
            (
                "Rotating the signing keys",
                [
                    "After rotating the signing keys, run kubeseal --re-encrypt on every sealed secret.",
                    "Then restart the sealed-secrets controller.",
                ],
            )
        ],
    )
    write_pptx(
        root / "reviews/q3.pptx",
        "Quarterly review",
        [("Latency budget", ["The p99 latency budget is 300 ms per request."])],
    )
    write_xlsx(root / "inventory/ports.xlsx", [["service", "port"], ["grafana", "3000"], ["prometheus", "9090"]])
    return root


def add_bad_files(root, limits: SourceLimits):
    write_image_only_pdf(root / "manuals/scanned.pdf")
    write_encrypted_pdf(root / "manuals/secret.pdf")
    (root / "runbooks/broken.docx").write_bytes(b"PK\x03\x04 this is not really a zip" * 20)
    write_zip_bomb_docx(root / "runbooks/bomb.docx", limits.max_unzipped_bytes + 1_000_000)
    (root / "docs/passwd.md").symlink_to("/etc/passwd")
    (root / "images").mkdir()
    for name in ("a.png", "b.png", "c.svg"):
        (root / "images" / name).write_bytes(b"\x89PNG")


LIMITS = SourceLimits(max_unzipped_bytes=2_000_000)


@pytest.fixture(scope="module")
def team_kb(tmp_path_factory):
    root = build_team_folder(tmp_path_factory.mktemp("team"))
    add_bad_files(root, LIMITS)
    rt = make_runtime(tmp_path_factory.mktemp("home"), max_unzipped_mb=LIMITS.max_unzipped_bytes / 1e6)
    report = ingest(rt, root, "team", progress=False)
    yield rt, report, root
    rt.close()


@pytest.mark.parametrize("doc_key,title,question", FINDABLE, ids=[f[0].split(".")[-1] for f in FINDABLE])
def test_each_format_is_findable_by_its_content_with_title_and_doc_key(team_kb, doc_key, title, question):
    rt, report, _ = team_kb
    result = rt.lookup_service.lookup(question, "s-" + doc_key.replace("/", "-"), kb="team")
    assert result.documents, question
    best = result.documents[0]
    assert (best.doc_key, best.title) == (doc_key, title)


def test_bad_files_are_one_warning_each_and_the_rest_is_ingested(team_kb):
    rt, report, _ = team_kb
    warnings = report.warnings
    expect = {
        "manuals/scanned.pdf": "no extractable text",
        "manuals/secret.pdf": "encrypted",
        "runbooks/broken.docx": "corrupt archive",
        "runbooks/bomb.docx": "zip bomb",
        "docs/passwd.md": "symbolic link",
    }
    for name, words in expect.items():
        mine = [w for w in warnings if w.startswith(name + ":")]
        assert len(mine) == 1 and words in mine[0] and "\n" not in mine[0], (name, mine)
    assert [w for w in warnings if w.startswith("unsupported file types")] == [
        "unsupported file types skipped: .png (2), .svg (1)"
    ]
    assert report.documents == len(FINDABLE) and report.skipped == len(expect)
    assert report.formats == {"html": 1, "pdf": 1, "docx": 1, "pptx": 1, "xlsx": 1, "txt": 1, "mdx": 1}
    # nothing half-written: the catalog holds exactly the good documents and the vectors match it
    catalog = rt.catalog.documents("team")
    assert set(catalog) == {k for k, _, _ in FINDABLE}
    assert rt.vectors.count("team") == sum(d.chunk_count for d in catalog.values()) == report.chunks
    rows = list(rt.vectors.texts("team"))
    assert not [doc_key for _, doc_key, _, text in rows if "root:" in text or doc_key == "docs/passwd.md"]


def test_heading_path_reaches_bm25_and_the_stored_text(team_kb):
    rt, _, _ = team_kb
    texts = [text for _, doc_key, _, text in rt.vectors.texts("team") if doc_key == "runbooks/key-rotation.docx"]
    assert texts and all(t.startswith("Key rotation runbook › Rotating the signing keys\n") for t in texts)


def test_a_file_that_breaks_later_keeps_its_last_good_version(tmp_path):
    root = build_team_folder(tmp_path / "kb")
    rt = make_runtime(tmp_path / "home")
    try:
        ingest(rt, root, "keep", progress=False)
        (root / "runbooks/key-rotation.docx").write_bytes(b"garbage now")
        report = ingest(rt, root, "keep", progress=False)
        assert any(w.startswith("runbooks/key-rotation.docx: corrupt archive") for w in report.warnings)
        assert report.removed == 0 and "runbooks/key-rotation.docx" in rt.catalog.documents("keep")
        r = rt.lookup_service.lookup("re-encrypt sealed secrets after rotating the signing keys", "s", kb="keep")
        assert r.documents[0].doc_key == "runbooks/key-rotation.docx"
    finally:
        rt.close()


def test_a_new_parser_version_reembeds_an_existing_kb_cleanly(tmp_path, monkeypatch):
    root = write_kb(
        tmp_path / "kb", {"ops/a.md": "# Disk\n\nFree space with du.", "ops/b.md": "# Pods\n\nRestart them."}
    )
    rt = make_runtime(tmp_path / "home")
    try:
        ingest(rt, root, "old", progress=False)
        monkeypatch.setattr(documents, "PARSER_VERSION", "next")
        report = ingest(rt, root, "old", progress=False)
        assert (report.changed, report.unchanged, report.chunks) == (2, 0, 2)
        assert rt.vectors.count("old") == sum(d.chunk_count for d in rt.catalog.documents("old").values())
    finally:
        rt.close()


def test_symlinked_files_and_folders_outside_the_root_are_never_read(tmp_path):
    outside = write_kb(tmp_path / "outside", {"secret.md": "# Secret\n\nthe launch codes"})
    root = write_kb(tmp_path / "kb", {"docs/ok.md": "# OK\n\nfine"})
    (root / "docs/passwd.md").symlink_to("/etc/passwd")
    (root / "docs/inner-link.md").symlink_to(root / "docs/ok.md")  # even inside the root: a link is not followed
    (root / "linked-folder").symlink_to(outside, target_is_directory=True)
    loaded = load_documents(root)
    assert [d.doc_key for d in loaded.documents] == ["docs/ok.md"]
    assert sorted(w.split(":")[0] for w in loaded.warnings) == [
        "docs/inner-link.md",
        "docs/passwd.md",
        "linked-folder/",
    ]
    assert not any("launch codes" in d.body for d in loaded.documents)


def test_size_limits_apply_after_conversion(tmp_path):
    big_script = "<script>" + "x" * 50_000 + "</script>"
    write_kb(
        tmp_path,
        {
            "big.md": "# Big\n\n" + "word " * 5_000,  # 25 kB of text
            "small-page.html": f"<html><head><title>Small</title>{big_script}</head>"
            "<body><p>tiny page</p></body></html>",
            "ok.md": "# OK\n\nfine",
        },
    )
    loaded = load_documents(tmp_path, SourceLimits(max_document_bytes=10_000, max_file_bytes=100_000))
    assert sorted(d.doc_key for d in loaded.documents) == ["ok.md", "small-page.html"]  # 50 kB raw, tiny as text
    [warning] = loaded.warnings
    assert warning.startswith("big.md: 0.0 MB of text, over the 0.0 MB per-document limit")
    too_big = load_documents(tmp_path, SourceLimits(max_file_bytes=20_000))
    assert any(w.startswith("big.md: ") and "file limit" in w for w in too_big.warnings)


def test_text_is_sanitised_at_parse_time(tmp_path):
    hostile = (
        '---\ntitle: "Evil\\0 \\x1b[31mtitle"\nentities: [{name: "Bad\\0Name"}]\n---\n'
        "# Heading\n\nnul\x00 here, \x1b]0;owned\x07osc, \x1b[2Jclear, \x9b31mcsi, bell\x07 and \x85c1.\n"
    )
    root = write_kb(tmp_path, {"h.md": hostile})
    [doc] = load_documents(root).documents
    text = doc.title + doc.body + json.dumps(doc.entities) + "".join(c.text for c in doc.chunks())
    assert not any(ch in text for ch in "\x00\x1b\x07\x9b\x85")
    assert "owned" not in text and doc.title == "Evil title"  # YAML-escaped NUL and colour sequence both gone
    assert "nul here, osc, clear, csi, bell and c1." in doc.body
    assert doc.entities == [{"name": "BadName"}]
    lone = parse_text("x.md", "# Lone \ud800 surrogate\n\ntext \udcff")
    assert (lone.title, lone.body.encode("utf-8")) == (
        "Lone \ufffd surrogate",
        "# Lone \ufffd surrogate\n\ntext \ufffd".encode(),
    )


def test_wrongly_typed_front_matter_is_a_warning_not_a_traceback(tmp_path):
    root = write_kb(
        tmp_path,
        {
            "ops/typed.md": "---\nkeywords: 5\ntitle: [a]\nentities: 3\nrelations: nope\ndomain: [x]\n---\n"
            "# Real title\n\nbody",
            "ops/broken-yaml.md": "---\ntitle: [unclosed\n---\n# Fine\n\nbody",
        },
    )
    loaded = load_documents(root)
    typed = next(d for d in loaded.documents if d.doc_key == "ops/typed.md")
    assert (typed.title, typed.keywords, typed.entities, typed.relations, typed.domain) == (
        "Real title",
        [],
        [],
        [],
        "ops",
    )
    mine = [w for w in loaded.warnings if w.startswith("ops/typed.md:")]
    assert {w.split("'")[1] for w in mine} == {"keywords", "title", "entities", "relations", "domain"}
    assert any(w.startswith("ops/broken-yaml.md: front matter is not valid YAML") for w in loaded.warnings)


def test_non_utf8_names(tmp_path):
    """A bad folder name is a one-line error and no KB; a bad file name inside is a warning."""
    home = tmp_path / "home"
    bad_root = os.fsdecode(bytes(tmp_path) + b"/kb\xff")
    write_kb(tmp_path / "good", {"ok.md": "# OK\n\nfine"})
    os.makedirs(bad_root)
    with open(os.path.join(bad_root, "a.md"), "w") as f:
        f.write("# A\n\nbody")
    out = run_cli(home, "ingest", bad_root, "--kb", "badroot")
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "not valid UTF-8" in out.stderr
    assert "Traceback" not in out.stderr
    listed = run_cli(home, "kb", "list", "--json")
    assert "badroot" not in listed.stdout

    with open(os.fsdecode(bytes(tmp_path / "good") + b"/caf\xe9.md"), "w") as f:
        f.write("# Cafe\n\nbody")
    loaded = load_documents(tmp_path / "good")
    assert [d.doc_key for d in loaded.documents] == ["ok.md"]
    assert loaded.warnings == ["caf\\xe9.md: the file name is not valid UTF-8; rename it"]


def test_dry_run_lists_reads_conversions_and_skips_and_writes_nothing(tmp_path):
    root = build_team_folder(tmp_path / "kb")
    add_bad_files(root, LIMITS)
    home = tmp_path / "home"
    out = run_cli(home, "ingest", str(root), "--kb", "dry", "--dry-run", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["formats"] == {"docx": 3, "html": 1, "mdx": 1, "pdf": 3, "pptx": 1, "txt": 1, "xlsx": 1}
    assert data["counts"] == {"read": 2, "convert": 9, "skipped": 1, "unsupported": 3}
    assert data["skipped"] == [{"name": "docs/passwd.md", "reason": "a symbolic link; not followed"}]
    assert data["unsupported"] == {".png": 2, ".svg": 1}
    text = run_cli(home, "ingest", str(root), "--kb", "dry", "--dry-run")
    assert (
        "convert  manuals/frobnicator.pdf (pdf" in text.stdout and "2 to read, 9 to convert, 1 skipped" in text.stdout
    )
    assert not (home / "milvus.db").exists() and not (home / "executor.db").exists()


def test_markdown_only_ingest_never_imports_the_converters(tmp_path):
    root = write_kb(tmp_path, {"a.md": "# A\n\ntext", "b.txt": "plain"})
    code = (
        "import sys; from pathlib import Path; from executor.retrieval.sources import load_documents; "
        f"docs = load_documents(Path({str(root)!r})).documents; "
        "heavy = [m for m in ('markitdown', 'pdfminer', 'mammoth', 'pptx', 'openpyxl', 'magika') if m in sys.modules]; "
        "print(len(docs), heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert out.stdout.strip() == "2 []", out.stderr


def test_an_empty_or_all_bad_folder_is_an_error_that_writes_nothing(tmp_path):
    root = tmp_path / "kb"
    write_image_only_pdf(root / "scan.pdf")
    rt = make_runtime(tmp_path / "home")
    try:
        with pytest.raises(InputError, match=r"no documents to ingest.*scan.pdf: no extractable text"):
            ingest(rt, root, "empty", progress=False)
        assert rt.catalog.get("empty") is None and not rt.vectors.has("empty")
    finally:
        rt.close()
