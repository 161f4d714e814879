"""What the seventh hostile pass found (issue 30): a file emptied on disk kept answering with the text it held
before, as a PRECISE result, because "a file that fails this time keeps the version ingested before" took an
empty file (the user deleted its content) for a failed read."""

from conftest import run_cli


def _doc(n: int) -> str:
    return f"---\ntitle: Doc {n}\n---\n# Doc {n}\n\nService {n} returns error code E{n} when its queue is full.\n"


def test_an_emptied_file_no_longer_answers_with_its_old_text(tmp_path):
    kb = tmp_path / "kb"
    kb.mkdir()
    for n in range(1, 6):
        (kb / f"d{n}.md").write_text(_doc(n))
    home = tmp_path / "home"
    r = run_cli(home, "ingest", str(kb), "--kb", "probe", "--no-llm-extract")
    assert r.returncode == 0, r.stderr
    (kb / "d3.md").write_text("")  # the user removed the file's content (e.g. a leaked secret)
    r = run_cli(home, "ingest", str(kb), "--kb", "probe", "--no-llm-extract")
    assert r.returncode == 0, r.stderr
    r = run_cli(home, "lookup", "--kb", "probe", "error code E3")
    assert r.returncode == 0, r.stderr
    assert "returns error code E3 " not in r.stdout, r.stdout
