"""Round eight of the hostile pass (issue 30): the round-seven leftovers. A threshold of 0 (or below 0, or above 1)
in config.yaml is bad input naming the key and the file; a page in Latin-1 or in UTF-16 without a BOM is read in its
charset, while binary is still refused; an Office file whose part declares a DOCTYPE is refused by name whatever the
part is called and however far into it the DOCTYPE comes; a home's SQLite file made read-only is one line, exit 1,
before anything opens it (no stray `-shm`/`-wal`, its mode left as the user set it); an MCP request whose params
have the wrong shape gets -32602 naming the field."""

import io
import json
import re
import zipfile
from pathlib import Path

import pytest
from conftest import ingested_home, run_cli
from test_hostile6_faults import run_unprivileged
from test_hostile6_servers import stdio_mcp

NESTED = "retrieval:\n  normalization:\n"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("highly_relevant_threshold: 0\n", "highly_relevant_threshold"),
        ("reference_threshold: 0\n", "reference_threshold"),
        ("repeat_overlap_threshold: 0\n", "repeat_overlap_threshold"),
        ("entity_fuzzy_cutoff: 0\n", "entity_fuzzy_cutoff"),
        ("entity_embedding_threshold: 0.0\n", "entity_embedding_threshold"),
        (NESTED + "    reference-threshold: 0\n", "retrieval.normalization.reference-threshold"),
        (NESTED + "    supplement-threshold: -0.2\n", "retrieval.normalization.supplement-threshold"),
        (
            NESTED + "    embedders:\n      use-multilingual-v3: {highly-relevant-threshold: 1.5}\n",
            "retrieval.normalization.embedders.use-multilingual-v3.highly-relevant-threshold",
        ),
        (
            "retrieval:\n  repeats:\n    embedders:\n      use-multilingual-v3: {overlap-threshold: 0}\n",
            "retrieval.repeats.embedders.use-multilingual-v3.overlap-threshold",
        ),
    ],
    ids=lambda v: None if v.endswith("\n") else v,
)
def test_a_threshold_of_zero_or_out_of_range_in_config_yaml_is_bad_input_naming_key_and_file(tmp_path, text, key):
    config = tmp_path / "config.yaml"
    config.write_text(text)
    r = run_cli(tmp_path / "home", "kb", "list", EXECUTOR_CONFIG=str(config))
    assert r.returncode == 2, (r.returncode, r.stdout[:300], r.stderr[-300:])
    assert f"{config} ({key})" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    config.write_text(re.sub(r"(?<=: )(-0\.2|1\.5|0\.0|0)(?=[\s}])", "0.5", text))  # the same key, in range
    ok = run_cli(tmp_path / "home", "kb", "list", EXECUTOR_CONFIG=str(config))
    assert ok.returncode == 0, ok.stderr


MENU = (
    "# Café menu\n\nThe frobnicator café opens at nine. Its crème brûlée comes à la carte, with a déjà vu\n"
    "discount for naïve façade painters. Orders are taken at the counter until five in the afternoon, and the\n"
    "kitchen closes when the last frobnicator leaves the building for the evening.\n"
)
RUNBOOK = (
    "# Gateway runbook\n\nRestart the quuxgateway when ERR_QUUX_TIMEOUT appears in its log; the pool\n"
    "drains within thirty seconds and new requests go to the standby node.\n"
)


def _primary(home, query: str) -> dict:
    r = run_cli(home, "lookup", "--kb", "enc", "--json", query)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["primary"][0]


def test_latin1_and_bomless_utf16_pages_are_read_in_their_charset_and_binary_is_still_refused(tmp_path):
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "menu.md").write_bytes(MENU.encode("latin-1"))  # read as cp1257 before: "Crčme brūlée ą la carte"
    (kb / "runbook.md").write_bytes(RUNBOOK.encode("utf-16-le"))  # no BOM: refused as binary before
    (kb / "noise.md").write_bytes(Path("/bin/ls").read_bytes()[:200_000])
    home = tmp_path / "home"
    r = run_cli(home, "ingest", str(kb), "--kb", "enc", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["documents"] == 2, report
    assert report["warnings"] == ["noise.md: binary content (an executable), not text; skipped"], report
    menu = _primary(home, "frobnicator café crème brûlée")
    assert menu["doc_key"] == "menu.md" and menu["title"] == "Café menu", menu
    assert "café opens" in menu["content"] and "crème brûlée comes à la carte" in menu["content"], menu
    runbook = _primary(home, "quuxgateway ERR_QUUX_TIMEOUT")
    assert runbook["doc_key"] == "runbook.md" and "Restart the quuxgateway" in runbook["content"], runbook


@pytest.mark.parametrize(
    ("text", "charset"),
    [
        (
            "# Instruções\n\nA configuração não está correta. Verifique a conexão e a opção de segurança.\n" * 2,
            "latin-1",
        ),
        ("# Runbook\n\nRestart the gateway when ERR_TIMEOUT appears.\n" * 3, "utf-16-be"),
        ("# 运维手册\n\n当出现超时错误时重启网关。数据库连接池耗尽。\n" * 3, "utf-16-le"),
        # fewer undecodable bytes than 1 in 100: read as UTF-8 with stray bytes before, "caf\ufffd"
        (
            "# Menu\n\nA long line about the opening hours, the counter, the kitchen and the staff, then one café.\n"
            * 4,
            "latin-1",
        ),
    ],
    ids=["portuguese-latin1", "ascii-utf16be", "chinese-utf16le", "one-accent-per-line-latin1"],
)
def test_text_in_another_charset_decodes_to_what_was_written(text, charset):
    from executor.retrieval.converters import decode_text

    assert decode_text(text.encode(charset)) == text


def _office(fmt: str) -> tuple[bytes, str, bytes]:
    """A small real Office file of `fmt`, the part that holds its text, and that text."""
    out = io.BytesIO()
    if fmt == "docx":
        import docx

        doc = docx.Document()
        doc.add_paragraph("PLACEHOLDER")
        doc.save(out)
        return out.getvalue(), "word/document.xml", b"PLACEHOLDER"
    if fmt == "pptx":
        from pptx import Presentation

        deck = Presentation()
        deck.slides.add_slide(deck.slide_layouts[5]).shapes.title.text = "PLACEHOLDER"
        deck.save(out)
        return out.getvalue(), "ppt/slides/slide1.xml", b"PLACEHOLDER"
    import openpyxl

    book = openpyxl.Workbook()
    book.active["A1"] = "PLACEHOLDER"
    book.save(out)
    return out.getvalue(), "xl/worksheets/sheet1.xml", b"PLACEHOLDER"


def _hostile(fmt: str, secret: Path, hidden: str) -> tuple[bytes, str]:
    """`fmt` with a DOCTYPE in its text part, hidden from a look at a part's first 4 kB (`comment`: after a 5 kB
    comment) or at the parts named .xml (`renamed`: the part is slide1.dat, found by its content type); an external
    entity that reads `secret`, and a billion-laughs one. Returns the file and the part's name."""
    data, part, marker = _office(fmt)
    entities = "".join(f'<!ENTITY e{i} "{f"&e{i - 1};" * 10}">' for i in range(1, 9))
    doctype = f'<!DOCTYPE x [<!ENTITY leak SYSTEM "file://{secret}"><!ENTITY e0 "lol">{entities}]>'
    with zipfile.ZipFile(io.BytesIO(data)) as src:
        files = {name: src.read(name) for name in src.namelist()}
    xml = files[part]
    head, rest = (xml.split(b"?>", 1)[0] + b"?>", xml.split(b"?>", 1)[1]) if xml.startswith(b"<?xml") else (b"", xml)
    prolog = ("<!--" + "x" * 5000 + "-->" if hidden == "comment" else "") + doctype
    files[part] = head + prolog.encode() + rest.replace(marker, b"&leak; &e8;")
    if hidden == "renamed":
        new = part.replace(".xml", ".dat")
        old_name, new_name = part.rsplit("/", 1)[1], new.rsplit("/", 1)[1]
        files[new] = files.pop(part)
        rels = f"{part.rsplit('/', 1)[0]}/_rels/{old_name}.rels"
        if rels in files:
            files[f"{new.rsplit('/', 1)[0]}/_rels/{new_name}.rels"] = files.pop(rels)
        for name in files:
            if name.endswith(".rels") or name == "[Content_Types].xml":
                files[name] = files[name].replace(f"/{old_name}".encode(), f"/{new_name}".encode())
                files[name] = files[name].replace(f'"{old_name}'.encode(), f'"{new_name}'.encode())
        part = new
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, body in files.items():
            z.writestr(name, body)
    return out.getvalue(), part


def test_an_office_part_declaring_a_doctype_is_refused_by_name_wherever_it_hides(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-HOST-FILE-4711\n")
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "ok.md").write_text("# Fine\n\nA page about the frobnicator.\n")
    parts = {}
    for fmt in ("docx", "pptx", "xlsx"):
        for hidden in ("comment", "renamed"):
            data, part = _hostile(fmt, secret, hidden)
            (kb / f"{hidden}.{fmt}").write_bytes(data)
            parts[f"{hidden}.{fmt}"] = part
    r = run_cli(tmp_path / "home", "ingest", str(kb), "--kb", "xxe", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["documents"] == 1 and "SECRET-HOST-FILE" not in r.stdout + r.stderr, report
    for name, part in parts.items():
        about = [w for w in report["warnings"] if w.startswith(f"{name}:")]
        assert about == [
            f"{name}: refused: its {part} declares a DOCTYPE (XML entities), which Office files never do"
        ], (
            name,
            report["warnings"],
        )


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return ingested_home(tmp_path_factory, "hostile8")


@pytest.mark.parametrize("name", ["executor.db", "milvus.db"])
@pytest.mark.parametrize("who", ["root", "unprivileged"])
def test_a_read_only_sqlite_file_of_the_home_is_one_line_and_left_as_it_was(home, name, who):
    store = home / name
    store.chmod(0o444)
    try:
        r = (run_cli if who == "root" else run_unprivileged)(home, "lookup", "--kb", "sample", "ERR_TIMEOUT")
        beside = sorted(p.name for p in home.iterdir() if p.name.startswith(name + "-"))
        mode = store.stat().st_mode & 0o777
    finally:
        store.chmod(0o600)
    assert r.returncode == 1, (r.returncode, r.stdout[-300:], r.stderr[-300:])
    assert r.stderr.count("\n") == 1 and f"cannot write {store}: it is read-only (mode 0444)" in r.stderr, r.stderr
    assert beside == [] and mode == 0o444, (beside, oct(mode))
    assert run_cli(home, "lookup", "--kb", "sample", "ERR_TIMEOUT").returncode == 0


@pytest.mark.parametrize(
    ("params", "field"),
    [
        (
            {"name": "lookup_knowledge", "arguments": "query=pool"},
            "params.arguments: Input should be a valid dictionary",
        ),
        ({"name": 5, "arguments": {"query": "pool"}}, "params.name: Input should be a valid string"),
        ({"arguments": {"query": "pool"}}, "params.name: Field required"),
    ],
    ids=["arguments-a-string", "name-a-number", "name-missing"],
)
def test_an_mcp_call_whose_params_have_the_wrong_shape_names_the_field(home, params, field):
    with stdio_mcp(home) as ask:
        answer = ask(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}).encode())
        assert answer["id"] == 3 and answer["error"]["code"] == -32602, answer
        assert answer["error"]["message"] == f"Invalid params: {field}", answer
        answer = ask(b'{"jsonrpc": "2.0", "id": 4, "method": "no/such"}')  # an unknown method stays -32601
        assert answer["error"] == {"code": -32601, "message": "Method not found: no/such"}, answer
        assert "lookup_knowledge" in json.dumps(ask(b'{"jsonrpc": "2.0", "id": 5, "method": "tools/list"}'))
