"""What the second hostile pass found in ingestion and in the files options read (issue 30, round two), as
regression tests: identifiers in converted pages are stored as written, a file of many headings ingests, and
a --labels file or EXECUTOR_CONFIG that is not a regular file of sane size is one line naming it, exit 2."""

import json
import os

import docx
import openpyxl
import pytest
from conftest import run_cli


def test_identifiers_in_converted_pages_are_stored_and_found_as_written(tmp_path):
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "payments.html").write_text(
        "<html><head><title>Payments</title></head><body><h1>Payment errors</h1>"
        "<p>The code PAY_GATEWAY_DECLINED means the gateway refused the card; retries stop after "
        "max_retry_count attempts (2*3*4 seconds apart).</p></body></html>"
    )
    document = docx.Document()
    document.add_heading("Refund errors", 1)
    document.add_paragraph("REFUND_WINDOW_CLOSED is returned after refund_window_days; see 2*3*4.")
    document.save(str(kb / "refunds.docx"))
    book = openpyxl.Workbook()
    sheet = book.active
    assert sheet is not None
    sheet.append(["code", "setting"])
    sheet.append(["LEDGER_SYNC_FAILED", "sync_interval_s"])
    book.save(kb / "ledger.xlsx")
    home = tmp_path / "home"
    r = run_cli(home, "ingest", str(kb), "--kb", "pay", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["warnings"] == [], r.stdout
    for code, setting, source in (
        ("PAY_GATEWAY_DECLINED", "max_retry_count", "payments.html"),
        ("REFUND_WINDOW_CLOSED", "refund_window_days", "refunds.docx"),
        ("LEDGER_SYNC_FAILED", "sync_interval_s", "ledger.xlsx"),
    ):
        r = run_cli(home, "lookup", code, "--kb", "pay", "--no-graph")
        assert r.returncode == 0, r.stderr
        assert source in r.stdout and code in r.stdout and setting in r.stdout, r.stdout
        assert "\\_" not in r.stdout, r.stdout
    r = run_cli(home, "lookup", "PAY_GATEWAY_DECLINED", "--kb", "pay", "--no-graph")
    assert "2*3*4" in r.stdout and "\\*" not in r.stdout, r.stdout


def test_a_page_of_fifty_thousand_headings_ingests_chunked_by_size_with_one_warning(tmp_path):
    kb = tmp_path / "kb"
    kb.mkdir()
    # 540 kB: every heading its own section made 50,000 chunks, each carrying the page's 50,000 keywords
    (kb / "many.md").write_text("".join(f"# h{i}\ntext\n" for i in range(50_000)))
    (kb / "ok.md").write_text("# Fine\nA page about Docker.\n")
    home = tmp_path / "home"
    r = run_cli(home, "ingest", str(kb), "--kb", "many", "--json", timeout=600)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    warnings = report["warnings"]
    assert len(warnings) == 1 and warnings[0].startswith("many.md: 50,000 headings"), warnings
    assert report["documents"] == 2 and report["chunks"] < 2_000, report
    r = run_cli(home, "lookup", "h49999", "--kb", "many", "--no-graph")
    assert r.returncode == 0 and "source: many.md" in r.stdout and "h49999" in r.stdout, (r.stdout, r.stderr)


def one_error_line(r, code: int) -> str:
    assert r.returncode == code, (r.returncode, r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in r.stderr, r.stderr
    return lines[0]


def not_regular_files(tmp_path):
    """A device that reads forever, a FIFO no one writes to (its open blocks), a folder: each not a file."""
    fifo = tmp_path / "labels.fifo"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    return [("/dev/zero", "character device"), (str(fifo), "named pipe"), (str(folder), "folder")]


@pytest.mark.parametrize("command", ["calibrate", "eval-retrieval"])
def test_a_labels_option_that_is_not_a_regular_file_of_sane_size_is_one_line_naming_it(tmp_path, command):
    big = tmp_path / "big.yaml"
    with open(big, "wb") as f:  # sparse: 100 MB of zeros that take no disk
        f.truncate(100 * 1024 * 1024)
    for path, kind in [*not_regular_files(tmp_path), (str(big), "bytes")]:
        line = one_error_line(run_cli(tmp_path / "home", command, "--labels", path, timeout=60), 2)
        assert f"--labels {path}: " in line and kind in line, line


def test_an_executor_config_that_is_not_a_regular_file_of_sane_size_is_one_line_naming_it(tmp_path):
    big = tmp_path / "config.yaml"
    with open(big, "wb") as f:
        f.truncate(100 * 1024 * 1024)
    for path, kind in [*not_regular_files(tmp_path), (str(big), "bytes")]:
        line = one_error_line(run_cli(tmp_path / "home", "kb", "list", timeout=60, EXECUTOR_CONFIG=path), 2)
        assert path in line and "EXECUTOR_CONFIG" in line and kind in line, line
