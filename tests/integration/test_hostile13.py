"""Round thirteen of the hostile pass (issue 30): the leftovers of round twelve (`docs/reliability.md`). A database
whose recorded schema revision was set back by hand, its tables already those of a later one, is one line saying
so and is left as it was (it was "duplicate column name: file_stat", and a migration could stop half-written); a
lone surrogate escape in an MCP request over stdio gets the answer HTTP gives, naming the argument (it was -32700
"the line is not JSON"); short Slovene and Estonian pages in their code pages are read in them, not as a
Mac, DOS, HP or Big5 page, and Hungarian's ő ű in cp1250 are no longer windows-1252's õ û."""

import json
import sqlite3

import pytest
from conftest import last_error_line, run_cli, stop_process
from test_hostile5_servers import mcp_post
from test_hostile6_servers import http_session, stdio_mcp
from test_local_servers import start_mcp

from executor.retrieval.converters import decode_text


def _schema(db) -> list:
    with sqlite3.connect(db) as conn:
        return [
            conn.execute("SELECT version_num FROM alembic_version").fetchall(),
            conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall(),
        ]


# -- a database whose recorded revision was set back ---------------------------------------------------
@pytest.mark.parametrize(
    ("revision", "drop"),
    [("0007", None), ("0008", None), ("0007", "file_stat")],
    ids=["0007-of-0009", "0008-of-0009", "0007-half-of-0008"],
)
def test_a_database_whose_revision_was_set_back_is_one_line_and_left_unchanged(tmp_path, revision, drop):
    home = tmp_path / "home"
    assert run_cli(home, "kb", "list").returncode == 0  # a new home: its database at the newest revision
    db = home / "executor.db"
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE alembic_version SET version_num = ?", (revision,))
        if drop:  # 0008 stopped after its first columns: the next one is already there, this one not yet
            conn.execute(f"ALTER TABLE document DROP COLUMN {drop}")
    before = _schema(db)
    line = last_error_line(run_cli(home, "kb", "list"), 1)
    assert str(db) in line and f"revision {revision!r} is recorded" in line, line
    assert "later migration" in line and "restore" in line, line
    assert _schema(db) == before  # no migration half-written, nothing stamped


# -- MCP: a lone surrogate escape over stdio -------------------------------------------------------------
LONE = {"jsonrpc": "2.0", "id": 9, "method": "tools/call"}
LONE["params"] = {"name": "lookup_knowledge", "arguments": {"query": "\ud800"}}  # json.dumps: "\\ud800"


def test_a_lone_surrogate_over_stdio_gets_the_answer_http_gives(tmp_path):
    home = tmp_path / "home"
    with stdio_mcp(home) as ask:
        over_stdio = ask(json.dumps(LONE).encode())
        assert ask(json.dumps({**LONE, "id": 10, "params": {"name": "lookup_knowledge"}}).encode())["id"] == 10
    log = open(tmp_path / "server.log", "w")
    proc, port = start_mcp(home, log)
    try:
        _, body, _ = mcp_post(port, LONE, http_session(port))
    finally:
        stop_process(proc, log)
    over_http = json.loads(next(line for line in body.split(b"\n") if line.startswith(b"data: "))[6:])
    assert over_stdio == over_http, (over_stdio, over_http)
    assert over_stdio["id"] == 9 and over_stdio["result"]["isError"] is True, over_stdio
    text = over_stdio["result"]["content"][0]["text"]
    assert text.startswith("invalid arguments: query: ") and "unicode string" in text, text


# -- legacy code pages: Slovene (cp1250) and Estonian (cp1257) ----------------------------------------------
@pytest.mark.parametrize(
    ("text", "charset"),
    [
        ("Če prehod javi napako, znova zaženite storitev.\n", "cp1250"),  # Mac Central European: "»e ... zaěenite"
        ("Õige seadistus on kirjeldatud allpool.\n", "cp1257"),  # Big5: "掂ge seadistus"
        (
            "# Sisselogimise probleemid\n\nKui parool ei tööta, lähtestage see kontoseadetes.\n",
            "cp1257",
        ),  # DOS Baltic (cp775): "ei t÷÷ta, lõhtestage"
        (
            "Ühenduse katkemisel proovige hiljem uuesti; päring võib võtta mõne sekundi.\n",
            "cp1257",
        ),  # HP Roman-8: "Éhenduse ... pðring v¾ib"
    ],
    ids=["slovene-cp1250", "short-estonian-cp1257", "estonian-heading-cp1257", "estonian-cp1257"],
)
def test_a_short_slovene_or_estonian_page_is_read_in_its_code_page(text, charset):
    assert decode_text(text.encode(charset)) == text


HUNGARIAN = [
    "A szerver hibát jelez, ha a kérés túl hosszú. Győződjön meg arról, hogy a felhasználó jelszava érvényes.\n",
    "Ha a kiszolgáló nem válaszol, ellenőrizze a hálózati kapcsolatot, és indítsa újra a szolgáltatást.\n",
    "A szolgáltatás újraindítása előtt ellenőrizze a naplófájlokat.\nHa az átjáró időtúllépési hibát jelez, "
    "növelje a várakozási időt a beállításokban.\n",
    "# Útmutató\n\nA fejlesztői környezet beállítása után futtassa a teszteket. A hibaüzenetek a naplóban "
    "jelennek meg.\n",
]


# each read with õ (windows-1252 or cp1257) before: "Gyõzõdjön", "ellenõrizze", "elõtt", "fejlesztõi"
@pytest.mark.parametrize("text", HUNGARIAN, ids=["gyozodjon", "ellenorizze", "two-lines", "heading"])
def test_a_hungarian_page_in_cp1250_keeps_its_double_acute_letters(text):
    assert decode_text(text.encode("cp1250")) == text


@pytest.mark.parametrize(
    "text",
    [
        "Sûr, c'est dû au côté du réseau.\n",
        "As informações são importantes; as opções estão disponíveis.\n",
        "Kontrollige, kas server on kättesaadav, ja proovige mõne minuti pärast uuesti.\n",
    ],
    ids=["french-u-circumflex", "portuguese-o-tilde", "estonian-o-tilde"],
)
def test_o_tilde_and_u_circumflex_of_other_languages_stay(text):
    assert decode_text(text.encode("cp1252")) == text
