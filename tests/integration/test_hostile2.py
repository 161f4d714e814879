"""What a second hostile pass found (issue 30, round two), as regression tests: a damaged or missing store is
called damaged or missing with its path, a broken backend fails the command, bad input and settings are exit 2
with a line naming them, and the local servers read headers as the RFCs say."""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import zipfile

import pytest
from conftest import REPO, copy_of, free_port, pristine_home, run_cli
from test_local_servers import INIT, post, start_mcp

from executor.core.errors import redact


def one_error_line(r, code: int) -> str:
    assert r.returncode == code, (r.returncode, r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("error: "), r.stderr
    assert "Traceback" not in r.stderr and "Exception" not in lines[-1] and "Error:" not in lines[-1], r.stderr
    return lines[-1]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    return pristine_home(tmp_path_factory, "hostile2-home")


@pytest.fixture
def home(pristine, tmp_path):
    copy = copy_of(pristine, tmp_path)
    yield copy
    run_cli(copy, "graph", "stop")


# -- damaged and missing stores -----------------------------------------------------------------------
def test_a_truncated_graph_file_is_refused_naming_it_and_left_as_it_was(home):
    (aof,) = (home / "graph" / "appendonlydir").glob("*.incr.aof")
    os.truncate(aof, aof.stat().st_size * 2 // 3)
    size = aof.stat().st_size
    line = one_error_line(run_cli(home, "graph", "neighbors", "ComfyUI"), 1)
    assert str(aof) in line and "truncated" in line, line
    assert aof.stat().st_size == size  # redis's default cuts the file down to what it could read


def test_a_missing_database_beside_full_vectors_says_the_catalog_is_lost(home):
    (home / "executor.db").unlink()
    line = one_error_line(run_cli(home, "lookup", "ERR_TIMEOUT"), 1)
    assert "executor.db is missing" in line and "milvus.db" in line and "unknown knowledge base" not in line, line


def test_a_damaged_record_in_the_vector_file_is_one_line_naming_it(home):
    with sqlite3.connect(home / "milvus.db") as conn:  # every record's bytes scrambled, the SQLite file whole
        # the KB's live collection, a table of its own: the generation its ingest promoted (`kb_sample_G1`)
        tables = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        (live,) = [n for n in tables if n.startswith("kb_sample") and not n.endswith("_DONE")]
        conn.text_factory = bytes
        for rowid, data in conn.execute(f"SELECT id, data FROM {live}").fetchall():
            scrambled = bytearray(data)
            for i in range(40, len(scrambled), 37):
                scrambled[i] ^= 0x5A
            conn.execute(f"UPDATE {live} SET data = ? WHERE id = ?", (bytes(scrambled), rowid))
    r = run_cli(home, "lookup", "ERR_TIMEOUT")
    line = one_error_line(r, 1)
    assert str(home / "milvus.db") in line and "damaged" in line and "MilvusException" not in line, line
    assert r.stdout == "", r.stdout  # the Lite server's own complaint stays in its log


@pytest.fixture
def full_disk(pristine, tmp_path):
    """A copy of the ingested home on a tmpfs filled to the last byte. Needs mount rights (root)."""
    where = tmp_path / "disk"
    where.mkdir()
    size = sum(f.stat().st_size for f in pristine.rglob("*") if f.is_file()) + (8 << 20)
    mount = ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)]
    if subprocess.run(mount, capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        shutil.copytree(pristine, where / "home", ignore=shutil.ignore_patterns("*.sock", "falkordb.pid"))
        with open(where / "filler", "wb") as fh:
            try:
                while True:
                    fh.write(b"\0" * (1 << 16))
                    fh.flush()
            except OSError:
                pass
        yield where / "home"
    finally:
        run_cli(where / "home", "graph", "stop")
        subprocess.run(["umount", "-l", str(where)], check=True)


def test_a_full_disk_on_lookup_says_the_disk_is_full_and_where(full_disk):
    line = one_error_line(run_cli(full_disk, "lookup", "ERR_TIMEOUT", "--session", "full-1"), 1)
    assert "disk is full" in line and str(full_disk) in line and "disk I/O error" not in line, line


# -- a broken backend fails the command -----------------------------------------------------------------
def test_ingest_with_a_failing_graph_backend_exits_1_naming_it(tmp_path):
    kb = tmp_path / "kb" / "ops"
    kb.mkdir(parents=True)
    (kb / "a.md").write_text("# Alpha\nAlpha runs on Docker.\n")
    home = tmp_path / "home"
    assert run_cli(home, "kb", "create", "small", "--entities", "Software").returncode == 0
    r = run_cli(
        home,
        "ingest",
        str(tmp_path / "kb"),
        "--kb",
        "small",
        NEO4J_URI="neo4j://127.0.0.1:1",
        EXECUTOR_GRAPH_TIMEOUT_S="3",
    )
    line = one_error_line(r, 1)
    assert r.stderr.strip() == line, r.stderr  # the driver's own log line stays off the terminal
    assert "Neo4j at neo4j://127.0.0.1:1" in line and "graph was not built" in line, line
    assert "no graph config" not in r.stdout + r.stderr, r.stdout


def test_milvus_uri_refused_fails_fast_naming_the_variable(pristine):
    started = time.monotonic()
    r = run_cli(pristine, "lookup", "x", MILVUS_URI=f"http://127.0.0.1:{free_port()}")
    line = one_error_line(r, 1)
    assert "MILVUS_URI" in line and "refused" in line, line
    assert time.monotonic() - started < 28  # pymilvus alone waited EXECUTOR_MILVUS_TIMEOUT_S (30 s)


# -- settings, URLs, homes --------------------------------------------------------------------------
def test_a_config_file_named_but_missing_is_an_error_naming_it(tmp_path):
    missing = tmp_path / "nowhere.yaml"
    line = one_error_line(run_cli(tmp_path / "home", "kb", "list", EXECUTOR_CONFIG=str(missing)), 2)
    assert str(missing) in line, line


def test_an_unknown_key_in_the_config_file_is_refused_by_name(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("modle: gpt-4o\nmodel: gpt-4o\n")
    line = one_error_line(run_cli(tmp_path / "home", "kb", "list", EXECUTOR_CONFIG=str(config)), 2)
    assert str(config) in line and "'modle'" in line and "'model'" not in line, line


@pytest.mark.parametrize(
    "env, name",
    [
        ({"EXECUTOR_DATABASE_URL": "postgresql://u:s3cretPw@127.0.0.1:notaport/db"}, "EXECUTOR_DATABASE_URL"),
        ({"EXECUTOR_DATABASE_URL": "garbage:::"}, "EXECUTOR_DATABASE_URL"),
        ({"NEO4J_URI": "neo4j://neo:s3cretPw@::1:7687"}, "NEO4J_URI"),
        ({"NEO4J_URI": "neo4j://[::1:7687"}, "NEO4J_URI"),
        ({"MILVUS_URI": "http://127.0.0.1:99999"}, "MILVUS_URI"),
    ],
)
def test_a_malformed_url_names_its_variable_and_never_its_password(tmp_path, env, name):
    r = run_cli(tmp_path / "home", "kb", "list", **env)
    line = one_error_line(r, 2)
    assert name in line and "ValueError" not in line and "ArgumentError" not in line, line
    assert "s3cretPw" not in r.stdout + r.stderr, r.stderr


def homes(tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    # a link into a system folder (/etc was adopted as a home): one no code, old or new, can write into
    link = tmp_path / "system-link"
    link.symlink_to("/proc/1")
    return {"file": a_file, "under-a-file": a_file / "home", "proc": "/proc/1", "symlink-to-system": link}


@pytest.mark.parametrize("case", ["file", "under-a-file", "proc", "symlink-to-system"])
def test_a_home_that_cannot_be_ours_is_refused_with_one_line(tmp_path, case):
    where = homes(tmp_path)[case]
    line = one_error_line(run_cli(where, "kb", "list"), 2)
    assert "EXECUTOR_HOME" in line and str(where) in line, line


def test_a_home_in_a_system_folder_is_refused_before_anything_is_written(tmp_path):
    from executor.core.fs import home_folder

    link = tmp_path / "etc-link"
    link.symlink_to("/etc")
    with pytest.raises(PermissionError, match="system folder"):
        home_folder(link)


# -- bad input is exit 2, with the input named ------------------------------------------------------------
def test_kb_create_with_a_bad_entity_type_is_a_usage_error_naming_it(tmp_path):
    line = one_error_line(run_cli(tmp_path / "home", "kb", "create", "k", "--entities", "Software,bad type!"), 2)
    assert "--entities" in line and "bad type!" in line, line


def test_a_kb_description_is_bounded(tmp_path):
    line = one_error_line(run_cli(tmp_path / "home", "kb", "create", "k", "--description", "x" * 5000), 2)
    assert "--description" in line and "5,000" in line, line
    listed = run_cli(tmp_path / "home", "kb", "list", "--json")
    assert listed.returncode == 0 and '"k"' not in listed.stdout, listed.stdout  # nothing half-created


def test_a_long_missing_dimension_is_named_as_such(pristine):
    r = run_cli(pristine, "lookup", "ERR_TIMEOUT", "--missing-dimension", "y" * 300)
    line = one_error_line(r, 2)
    assert "missing dimension" in line and "the query" not in line and len(line) < 120, line


def test_mcp_token_without_http_is_a_usage_error(tmp_path):
    line = one_error_line(run_cli(tmp_path / "home", "mcp", "--token", "t0ken-for-the-tests-0123456789"), 2)
    assert "--token" in line and "--http" in line and "t0ken-for" not in line, line


def test_the_non_loopback_refusal_shows_the_header_to_send(tmp_path):
    r = run_cli(tmp_path / "home", "mcp", "--http", "--host", "0.0.0.0", "--port", str(free_port()))
    line = one_error_line(r, 2)
    assert "`Authorization: Bearer TOKEN`" in line, line
    assert redact("Authorization: Bearer sk-live-0123") == "Authorization: ***"  # a real one still goes


# -- hostile documents -------------------------------------------------------------------------------------
def doctype_docx(path):
    types = (
        '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="xml" ContentType="application/xml"/></Types>'
    )
    document = (
        '<?xml version="1.0"?><!DOCTYPE w:document [<!ENTITY a "lol">]><w:document xmlns:w="http://schemas.'
        'openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>Hi &a;</w:t></w:r></w:p>'
        "</w:body></w:document>"
    )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("[Content_Types].xml", types)
        z.writestr("word/document.xml", document)


def test_a_docx_with_a_doctype_and_deep_front_matter_are_one_line_each(tmp_path):
    kb = tmp_path / "kb" / "ops"
    kb.mkdir(parents=True)
    doctype_docx(kb / "doctype.docx")
    (kb / "deep.md").write_text("---\ntitle: Deep\nkeywords: " + "[" * 5000 + "]" * 5000 + "\n---\n# Deep\nBody.\n")
    (kb / "ok.md").write_text("# Fine\nA page about Docker.\n")
    r = run_cli(tmp_path / "home", "ingest", str(tmp_path / "kb"), "--kb", "docs", "--json")
    assert r.returncode == 0, r.stderr
    warnings = json.loads(r.stdout)["warnings"]
    docx = [w for w in warnings if w.startswith("ops/doctype.docx:")]
    deep = [w for w in warnings if w.startswith("ops/deep.md:")]
    assert len(docx) == 1 and "DOCTYPE" in docx[0] and "Expat" not in docx[0], warnings
    assert len(deep) == 1 and "nesting depth" in deep[0] and "line 3" in deep[0] and "Scanner" not in deep[0], warnings


# -- the local servers ------------------------------------------------------------------------------------
TOKEN = "t0ken-for-the-tests-0123456789"


def test_the_mcp_server_reads_host_and_authorization_as_the_rfcs_say(pristine, tmp_path):
    log = open(tmp_path / "server.log", "w")
    proc, port = start_mcp(pristine, log, "--token", TOKEN)
    auth = f"Authorization: Bearer {TOKEN}\r\n"
    body = json.dumps(INIT).encode()
    try:
        assert post(port, f"127.0.0.1:{port}", body, extra=auth) == 200
        assert post(port, f"LOCALHOST:{port}", body, extra=auth) == 200  # host names are case-insensitive
        assert post(port, f"127.0.0.1:{port}", body, extra=f"authorization: bearer {TOKEN}\r\n") == 200  # RFC 7235
        assert post(port, f"127.0.0.1:{port}", body, extra=f"Authorization: Basic {TOKEN}\r\n") == 401
        # a second Host or Origin header: which one a proxy or the app reads is anyone's guess, so neither
        assert post(port, f"127.0.0.1:{port}", body, extra=auth + "Host: evil.example\r\n") in (400, 421)
        assert post(port, "evil.example", body, extra=auth + f"Host: 127.0.0.1:{port}\r\n") in (400, 421)
        two_origins = f"Origin: http://127.0.0.1:{port}\r\nOrigin: http://evil.example\r\n"
        assert post(port, f"127.0.0.1:{port}", body, extra=auth + two_origins) in (400, 403)
    finally:
        proc.send_signal(2)
        proc.wait(timeout=30)
        log.close()


def test_stdio_garbage_gets_a_json_rpc_parse_error(pristine):
    env = {**os.environ, "EXECUTOR_HOME": str(pristine)}
    lines = b"this is not json\n" + json.dumps(INIT).encode() + b"\n"
    proc = subprocess.run(
        [sys.executable, "-m", "executor.cli.main", "mcp"],
        input=lines,
        capture_output=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )
    answers = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert answers[0] == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error: the line is not JSON"},
    }, answers
    assert answers[1]["id"] == 1 and "result" in answers[1], answers
    assert b"validation error" not in proc.stderr and b"Received exception" not in proc.stderr, proc.stderr
