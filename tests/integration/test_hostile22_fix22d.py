"""Round twenty-two's findings 7, 8, 11 and two wordings of 12 (evals/review/hostile22-findings.md), beyond the
cases in test_hostile22.py: what else a user meets around each mend, and what must keep working beside it."""

import json
import socket
import sqlite3
import subprocess

import pytest
from conftest import free_port, ingested_home, run_cli, stop_process

pytestmark = pytest.mark.timeout(300)

USER = {"messages": [{"role": "user", "content": "hi"}]}


def _tables(path) -> set[str]:
    with sqlite3.connect(path) as db:
        return {name for (name,) in db.execute("select name from sqlite_master where type = 'table'")}


# finding 7: another program's database


def test_another_programs_alembic_database_is_named_not_taken_for_a_newer_executors(tmp_path):
    """Many programs keep an Alembic revision of their own in `alembic_version`: such a file as executor's database
    was "written by a newer executor; upgrade executor", which no upgrade mends."""
    from executor.core.errors import BackendError
    from executor.stores.database import Database

    path = tmp_path / "executor.db"
    with sqlite3.connect(path) as db:
        db.execute("create table alembic_version (version_num varchar(32) primary key)")
        db.execute("insert into alembic_version values ('ae1027a6acf')")
        db.execute("create table users (id integer primary key, email text)")
    with pytest.raises(BackendError) as refused:
        Database(f"sqlite:///{path}")
    assert "not an Executor database" in str(refused.value) and "ae1027a6acf" in str(refused.value)
    assert "newer executor" not in str(refused.value)
    assert _tables(path) == {"alembic_version", "users"}


def test_a_file_of_other_tables_is_refused_naming_them_and_left_as_it_was(tmp_path):
    from executor.core.errors import BackendError
    from executor.stores.database import Database

    path = tmp_path / "executor.db"
    with sqlite3.connect(path) as db:
        db.execute("create table notes (id integer primary key, body text)")
        db.execute("create table tags (name text)")
    before = path.read_bytes()
    with pytest.raises(BackendError) as refused:
        Database(f"sqlite:///{path}")
    assert str(refused.value).startswith(f"the database {path} is not an Executor database")
    assert "other tables: notes, tags" in str(refused.value)
    assert path.read_bytes() == before  # not even the WAL pragma's header bytes
    assert not path.with_name("executor.db-wal").exists()


def test_a_new_or_empty_database_file_is_still_made_executors(tmp_path):
    from executor.stores.database import SCHEMA_REVISION, Database, schema_revision

    empty = tmp_path / "empty.db"
    empty.touch()
    for path in (empty, tmp_path / "new.db"):
        assert schema_revision(Database(f"sqlite:///{path}").engine) == SCHEMA_REVISION
        assert {"knowledge_base", "tool_invocation", "alembic_version"} <= _tables(path)


@pytest.mark.parametrize("revision", ["0001", "0005", "0009"])
def test_an_older_executor_database_is_still_upgraded(tmp_path, revision):
    """A database an older executor left at `revision` (made here by migrating a new file to it) opens and is
    upgraded, its rows kept."""
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import create_engine

    from executor.stores.database import MIGRATIONS, SCHEMA_REVISION, Database, schema_revision

    url = f"sqlite:///{tmp_path / 'old.db'}"
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    engine = create_engine(url)
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, revision)
    engine.dispose()
    with sqlite3.connect(tmp_path / "old.db") as db:
        db.execute("insert into session_document values ('s1', 'sample', 'a.md', 'ops', 'A', '2026-11-01 10:00:00')")
    assert schema_revision(Database(url).engine) == SCHEMA_REVISION
    with sqlite3.connect(tmp_path / "old.db") as db:
        assert db.execute("select doc_key from session_document").fetchall() == [("a.md",)]


def test_a_server_database_shared_with_other_tables_is_still_migrated(db_url):
    """A server database is commonly shared (LangGraph's checkpoint tables beside ours when EXECUTOR_CHECKPOINT_URL
    names the same one): other tables there are no reason to refuse it."""
    from sqlalchemy import create_engine, text

    from executor.stores.database import SCHEMA_REVISION, Database, schema_revision

    other = create_engine(db_url)
    with other.begin() as conn:
        conn.execute(text("CREATE TABLE checkpoints (thread_id VARCHAR(64) PRIMARY KEY)"))
    other.dispose()
    assert schema_revision(Database(db_url).engine) == SCHEMA_REVISION


# finding 8 and the 413 of finding 12: `executor mcp --http` on every interface


def _own_ipv6() -> str:
    found = subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.split()
    global_v6 = [a for a in found if ":" in a and not a.lower().startswith("fe80")]
    if not global_v6:
        pytest.skip("this machine has no IPv6 address besides loopback and link-local")
    return global_v6[0]


def _refused(port: int, head: str, body: bytes) -> tuple[int, dict]:
    """A request's status and JSON answer, read to the end: a refusal closes the connection after it."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head.encode("latin-1") + b"\r\n" + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head_part, _, answer = data.partition(b"\r\n\r\n")
    return int(head_part.split(b" ", 2)[1]), json.loads(answer)


def test_a_server_on_every_interface_takes_its_own_addresses_only_and_refuses_in_json_rpc(tmp_path_factory, tmp_path):
    """The machine's IPv6 address is answered too; an address that is not the machine's is still 421; every refusal
    of /mcp (a wrong Host or token, a body over 4 MB) is JSON-RPC's error, which an MCP host reads: it was OpenAI's
    `{"error": {"type": "invalid_request_error"}}`."""
    from test_local_servers import INIT, TOKEN, post, start_mcp

    from executor.core.local_http import MAX_BODY_BYTES

    address = _own_ipv6()
    home = ingested_home(tmp_path_factory, "every-interface-v6")
    log = open(tmp_path / "server.log", "w")
    proc, port = start_mcp(home, log, "--host", "0.0.0.0", "--token", TOKEN)
    auth = f"Authorization: Bearer {TOKEN}\r\n"
    body = json.dumps(INIT).encode()
    try:
        assert post(port, f"[{address}]:{port}", body, extra=auth) == 200
        assert post(port, f"192.0.2.254:{port}", body, extra=auth) == 421
        refusals = {
            421: f"Host: 203.0.113.9:{port}\r\n{auth}Content-Length: {len(body)}\r\n",
            401: f"Host: 127.0.0.1:{port}\r\nAuthorization: Bearer wrong\r\nContent-Length: {len(body)}\r\n",
            413: f"Host: 127.0.0.1:{port}\r\n{auth}Content-Length: {MAX_BODY_BYTES + 1}\r\n",
        }
        for status, headers in refusals.items():
            head = f"POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nAccept: application/json\r\n{headers}"
            got, answer = _refused(port, head, body if status != 413 else b"{")
            assert got == status
            assert answer["jsonrpc"] == "2.0" and answer["id"] is None and answer["error"]["code"] == -32600, answer
    finally:
        stop_process(proc, log)
        run_cli(home, "graph", "stop")


def test_the_local_model_endpoint_keeps_openais_error_object():
    """Its clients are OpenAI's: LocalGuard's refusal there stays OpenAI's error object."""
    import asyncio

    from executor.core.local_http import LocalGuard

    sent = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    guard = LocalGuard(None, {"127.0.0.1:1"})
    scope = {"type": "http", "method": "POST", "headers": [(b"host", b"evil.example")]}
    asyncio.run(guard(scope, receive, send))
    assert sent[0]["status"] == 421
    assert json.loads(sent[1]["body"]) == {
        "error": {"message": "this server does not answer to that Host", "type": "invalid_request_error"}
    }


# finding 11: `llm serve`'s sampling options and null content


def _refusal(**fields) -> str:
    from executor.local_llm.protocol import RequestError, parse_request

    with pytest.raises(RequestError) as refused:
        parse_request(json.dumps({**USER, **fields}).encode())
    return str(refused.value)


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"top_p": -1}, "top_p: Input should be greater than or equal to 0"),
        ({"top_p": 1.5}, "top_p: Input should be less than or equal to 1"),
        ({"frequency_penalty": 1e9}, "frequency_penalty: Input should be less than or equal to 2"),
        ({"logit_bias": {"1": 101}}, "logit_bias.1: Input should be less than or equal to 100"),
        ({"logit_bias": {"hello": -100}}, "logit_bias.hello.[key]: Input should be a valid integer"),
    ],
)
def test_a_sampling_option_out_of_openais_bounds_is_refused_naming_it(fields, named):
    """`top_p` -1 was a 200. The options within bounds are applied (test_fix23b.py)."""
    assert named in _refusal(**fields)


def test_the_sampling_options_defaults_are_taken():
    """What asks for no change (OpenAI's defaults, which many clients send every time) is no reason to refuse."""
    from executor.local_llm.protocol import parse_request

    body = {**USER, "top_p": 1, "frequency_penalty": 0, "presence_penalty": 0.0, "logit_bias": {}, "user": "u"}
    assert parse_request(json.dumps(body).encode()).messages[0].text == "hi"


@pytest.mark.parametrize("role", ["user", "system", "tool"])
def test_a_turn_without_content_is_refused_except_an_assistants_call(role):
    """A user message of `null` content was answered as if it were empty."""
    from executor.local_llm.protocol import parse_request

    message = {"role": role, "content": None, **({"tool_call_id": "c1"} if role == "tool" else {})}
    said = _refusal(messages=[message])
    assert said == f"messages.0.content: Value error, a {role} message needs its content (text or content parts)"
    missing = {k: v for k, v in message.items() if k != "content"}
    assert "messages.0.content" in _refusal(messages=[missing])
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    body = {"messages": [USER["messages"][0], {"role": "assistant", "content": None, "tool_calls": [call]}]}
    assert parse_request(json.dumps(body).encode()).messages[1].tool_calls[0].function.name == "f"


# finding 12: the checkpoint URL named


def test_a_checkpoint_database_that_fails_is_named_by_its_variable_and_redacted_url(tmp_path):
    from executor.agent.checkpoints import open_checkpointer
    from executor.core.errors import BackendError
    from executor.core.settings import Settings

    port = free_port()  # nothing listens on it
    url = f"postgresql://executor:h22-Sekrit-pw@127.0.0.1:{port}/test?password=h22-Other-pw&sslmode=disable"
    with pytest.raises(BackendError) as failed:
        with open_checkpointer(Settings(home=tmp_path, checkpoint_url=url)):
            pass
    said = str(failed.value)
    assert said.startswith(
        f"checkpoint database unavailable (EXECUTOR_CHECKPOINT_URL postgresql://127.0.0.1:{port}/test)"
    )
    assert "Sekrit" not in said and "Other-pw" not in said and "executor@" not in said
