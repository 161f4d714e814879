"""Round twenty of the hostile pass, part A (issue 30): what it found of severity 6 or worse, and the lesser ones it
mended, each case as it failed.

Each test carries its finding's number in evals/review/hostile20-findings.md. A finding left open is marked
`xfail(strict=True)`: it fails on today's code (so the file passes), and whoever mends it flips the marker. Real
components throughout: the command line in homes of their own, Milvus Lite, the USE embedder, the embedded FalkorDB
and the SQL graph on SQLite, the machine's PostgreSQL.
"""

import json
import os
import shutil
import subprocess
import sys
import unicodedata
import uuid

import pytest
from conftest import SQL_SERVERS, fresh_database, ingested_home, last_error_line, run_cli, write_pages

pytestmark = pytest.mark.timeout(300)

NFC = unicodedata.normalize("NFC", "Café")
NFD = unicodedata.normalize("NFD", "Café")
LONG = "Zorblax" + "L" * 243  # 250 characters: under front matter's 300, over what a graph command may name


def page(title: str, entity: str, target: str) -> str:
    return (
        f"---\ntitle: {title}\nentities:\n  - {{name: {json.dumps(entity, ensure_ascii=False)}, type: Software}}\n"
        f"  - {{name: {target}, type: Software}}\nrelations:\n"
        f"  - {{source: {json.dumps(entity, ensure_ascii=False)}, type: RELATED_TO, target: {target}, weight: 0.5}}\n"
        f"---\n# {title}\n\nThis page is about {entity} and {target}.\n"
    )


@pytest.fixture(scope="module", params=["cypher", "sql"])
def graph_home(request, tmp_path_factory):
    """A KB with a graph, ingested through the command line, on the embedded FalkorDB and on the SQL graph: one page
    names Café composed (NFC), one with a combining accent (NFD, as macOS writes it), one a 250-character entity."""
    tmp = tmp_path_factory.mktemp(f"h20-graph-{request.param}")
    folder = write_pages(
        tmp / "docs",
        {
            "composed.md": page("composed", NFC, "Kestrel"),
            "decomposed.md": page("decomposed", NFD, "Osprey"),
            "long.md": page("long", LONG, "Heron"),
        },
    )
    env = {"EXECUTOR_GRAPH_BACKEND": request.param}
    home = tmp / "home"
    r = run_cli(home, "kb", "create", "birds", "--entities", "Software", "--relations", "RELATED_TO", **env)
    assert r.returncode == 0, r.stderr
    r = run_cli(home, "ingest", str(folder), "--kb", "birds", **env)
    assert r.returncode == 0, r.stderr
    return home, env, r.stdout + r.stderr


def neighbours(home, env, name: str) -> set[str]:
    r = run_cli(home, "graph", "neighbors", name, "--kb", "birds", "--hops", "1", "--json", **env)
    assert r.returncode == 0, (r.stdout, r.stderr)
    return {n["name"] for p in json.loads(r.stdout)["paths"] for n in p["nodes"]} - {name}


# -- finding 1: one name in two Unicode forms made two entities ----------------------------------------------------
def test_a_name_in_composed_and_decomposed_form_is_one_entity(graph_home):
    # "Café" typed on most systems (NFC) and as macOS writes it (NFD, e + U+0301) look the same and were two
    # entities: the pages that name it were split between them, and each spelling reached only its own page's
    # neighbours (NFC: Kestrel only; NFD: Osprey only)
    home, env, _ = graph_home
    assert {"Kestrel", "Osprey"} <= neighbours(home, env, NFC)
    assert {"Kestrel", "Osprey"} <= neighbours(home, env, NFD)


# -- finding 2: an entity stored longer than any command may name it -----------------------------------------------
def test_an_entity_name_is_stored_as_long_as_a_command_may_name_it(graph_home):
    # front matter keeps names up to 300 characters and the graph stored them so, but `graph neighbors`, `path`,
    # `show` and navigate_graph refuse a name over 200: "the entity name is 250 characters long; the limit is 200"
    # for an entity the graph holds
    home, env, said = graph_home
    assert "front matter 'entities' holds an item longer than 200 characters (250); cut to 200" in " ".join(
        said.split()
    )
    assert "Heron" in neighbours(home, env, LONG[:200])


# -- finding 3: a PostgreSQL user without rights: a bare ProgrammingError --------------------------------------------
@pytest.fixture
def unprivileged_postgres_url():
    """A PostgreSQL role that may log in but not create or change tables, pointed at a schema of its own."""
    from sqlalchemy import create_engine, make_url, text

    with fresh_database("postgres") as url:
        role = f"h20_{uuid.uuid4().hex[:8]}"
        admin = create_engine(SQL_SERVERS["postgres"])
        with admin.connect() as c:
            c.execute(text(f"CREATE ROLE {role} LOGIN PASSWORD 'pw-{role}'"))
            # it may use its schema (USAGE), not create in it: PostgreSQL's insufficient_privilege
            c.execute(text(f"GRANT USAGE ON SCHEMA {url.rsplit('%3D', 1)[1]} TO {role}"))
            c.commit()
        try:
            yield make_url(url).set(username=role, password=f"pw-{role}").render_as_string(hide_password=False)
        finally:
            from executor.stores.database import _engine

            _engine.cache_clear()
            with admin.connect() as c:
                c.execute(text(f"DROP OWNED BY {role}"))
                c.execute(text(f"DROP ROLE {role}"))
                c.commit()
            admin.dispose()


def test_a_postgres_user_without_rights_is_told_so_in_one_line(unprivileged_postgres_url, tmp_path):
    # the role may connect but not create the tables: "error: ProgrammingError: (psycopg.errors.InsufficientPrivilege)
    # permission denied for schema ..." (a class name, neither the database nor what is wrong with it);
    # MariaDB's refusal was already one line naming the database
    r = run_cli(tmp_path / "home", "kb", "list", EXECUTOR_DATABASE_URL=unprivileged_postgres_url)
    line = last_error_line(r, 1)
    assert "ProgrammingError" not in line and "psycopg.errors" not in line, line
    assert line.startswith("error: cannot open the database postgresql"), line
    assert "permission denied" in line and "EXECUTOR_DATABASE_URL" in line, line
    assert "pw-" not in r.stderr, r.stderr


# -- finding 4: --write on a full disk: a bare OSError -------------------------------------------------------------
@pytest.fixture
def full_folder(tmp_path):
    """A 64 kB tmpfs filled to the last byte (skips where this user may not mount one)."""
    folder = tmp_path / "full"
    folder.mkdir()
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {r.stderr.decode(errors='replace').strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=False)


@pytest.fixture(scope="module")
def sample_home(tmp_path_factory):
    return ingested_home(tmp_path_factory, "h20-sample")


def test_calibrate_write_on_a_full_disk_names_the_file_and_keeps_it(sample_home, full_folder, tmp_path):
    # `calibrate-repeats --write` (and `calibrate --write`) with config.yaml on a full disk: "error: OSError: [Errno
    # 28] No space left on device (run 'executor --debug ...')", naming neither the file nor that it was kept
    config = full_folder / "config.yaml"
    before = "# the team's own note\nembedder: use\n"
    config.write_text(before, encoding="utf-8")
    fill = os.open(full_folder / "fill", os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fill, b"\0" * 4096):
            pass
    except OSError:  # ENOSPC: not a byte left
        pass
    finally:
        os.close(fill)
    labels = write_pages(
        tmp_path / "labels",
        {
            "repeats.yaml": "- {earlier: ERR_TIMEOUT 是什么, later: ERR_TIMEOUT 怎么排查, label: repeat}\n"
            "- {earlier: Redis eviction policy, later: Redis 淘汰策略, label: repeat}\n"
            "- {earlier: Redis eviction policy, later: Nginx reverse proxy, label: distinct}\n"
            "- {earlier: HikariCP maximumPoolSize, later: PgBouncer pool mode, label: distinct}\n"
        },
    )
    r = run_cli(
        sample_home,
        "calibrate-repeats",
        "--labels",
        str(labels / "repeats.yaml"),
        "--write",
        EXECUTOR_CONFIG=str(config),
    )
    line = last_error_line(r, 1)
    assert "OSError" not in line and "Errno" not in line, line
    assert str(config) in line and "unchanged" in line, line
    assert config.read_text(encoding="utf-8") == before
    assert sorted(p.name for p in full_folder.iterdir()) == ["config.yaml", "fill"]


# -- finding 5: a first ingest killed after its vectors were written answered lookups, and its graph was there ---------
def die_in_ingest(home, folder, kb: str, owner, method: str, *, create: bool = False) -> None:
    """Ingest `folder` as `kb` into `home` (after `kb create` when `create`), the process ending (as SIGKILL would
    end it) when the ingest calls `owner(rt).method`."""
    from conftest import make_runtime

    from executor.retrieval.ingest import ingest

    def killed(*_args, **_kwargs):
        raise SystemExit(137)

    rt = make_runtime(home)
    try:
        if create:
            rt.catalog.create(kb)
        setattr(owner(rt), method, killed)
        with pytest.raises(SystemExit):
            ingest(rt, folder, kb, progress=False)
    finally:
        rt.close()


def test_a_first_ingest_that_died_before_its_catalog_commit_does_not_answer(tmp_path):
    # `kb create` then `ingest` killed (kill -9, the OOM killer) after the vectors were stored and before the catalog
    # recorded the documents: `kb list` said "0 documents", `lookup` answered HIGHLY_RELEVANT with the pages' full
    # text, and `graph neighbors` answered too: what a user stopped (a wrong folder) is served as if ingested
    from conftest import make_runtime

    from executor.core.errors import ExecutorError

    folder = write_pages(
        tmp_path / "docs",
        {
            "timeout.md": "# ERR_ZORBLAX\n\n`ERR_ZORBLAX` means the gateway gave up on the upstream after 45 s.\n",
            "disk.md": "# ERR_DISK_FULL\n\n`ERR_DISK_FULL` means no space is left on the device.\n",
        },
    )
    die_in_ingest(tmp_path / "home", folder, "wrong", lambda rt: rt.catalog, "apply_ingest", create=True)
    rt = make_runtime(tmp_path / "home")
    try:
        assert rt.catalog.documents("wrong") == {}
        assert not rt.vectors.has("wrong")  # its vectors become the KB's only after the catalog has its documents
        with pytest.raises(ExecutorError, match="ingest"):
            rt.lookup_service.lookup("ERR_ZORBLAX", session_id="h20-killed", kb="wrong")
    finally:
        rt.close()


def test_a_first_ingest_that_died_after_its_catalog_commit_says_it_has_no_vectors_until_ingested_again(tmp_path):
    # the other side of the catalog commit: the documents recorded, the vectors not yet the KB's. Nothing answers,
    # and the lookup says what mends it; the next ingest re-embeds the KB
    from conftest import make_runtime

    from executor.core.errors import BackendError
    from executor.retrieval.ingest import ingest

    folder = write_pages(
        tmp_path / "docs",
        {"timeout.md": "# ERR_ZORBLAX\n\n`ERR_ZORBLAX` means the gateway gave up on the upstream after 45 s.\n"},
    )
    die_in_ingest(tmp_path / "home", folder, "late", lambda rt: rt.vectors, "promote")
    rt = make_runtime(tmp_path / "home")
    try:
        assert list(rt.catalog.documents("late")) == ["timeout.md"]
        with pytest.raises(BackendError, match="has no vectors: run `executor ingest .* --kb late`"):
            rt.lookup_service.lookup("ERR_ZORBLAX", session_id="h20-late", kb="late")
        report = ingest(rt, folder, "late", progress=False)
        assert (report.added, report.changed, report.chunks) == (0, 1, 1)  # embedded again: the catalog had it
        found = rt.lookup_service.lookup("ERR_ZORBLAX", session_id="h20-late", kb="late")
        assert found.primary and found.primary[0].doc_key == "timeout.md"
    finally:
        rt.close()


KILLED_AFTER_FLUSH = """
import os, sys
from pathlib import Path
from executor.agent.runtime import Runtime
from executor.core.settings import Settings
from executor.retrieval.ingest import ingest

rt = Runtime(Settings())
stored = rt.vectors.flush_and_load

def killed(*args, **kwargs):
    stored(*args, **kwargs)
    os._exit(137)  # nothing after this runs, as after SIGKILL: no finally, no atexit

rt.vectors.flush_and_load = killed
ingest(rt, Path(sys.argv[1]), "wrong", progress=False)
"""


@pytest.fixture
def wrong_kb(tmp_path, monkeypatch):
    """A KB with a graph made by `kb create` (on the SQL graph), the folder of two pages its first ingest reads, and
    what `kb show --json` says of it."""
    monkeypatch.setenv("EXECUTOR_GRAPH_BACKEND", "sql")
    home = tmp_path / "home"
    r = run_cli(home, "kb", "create", "wrong", "--entities", "Software", "--relations", "RELATED_TO")
    assert r.returncode == 0, r.stderr
    folder = write_pages(
        tmp_path / "docs",
        {"kestrel.md": page("kestrel", "Kestrel", "Osprey"), "heron.md": page("heron", "Heron", "Osprey")},
    )

    def shown() -> dict:
        r = run_cli(home, "kb", "show", "wrong", "--json")
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    return home, folder, shown


def assert_nothing_stored(shown: dict) -> None:
    """`kb show` of a KB whose first ingest was stopped: no documents, no vectors, no graph, all agreeing."""
    assert (shown["documents"], shown["chunks"], shown["chunks_stored"]) == (0, 0, 0), shown
    assert shown["graph"]["entities"] == 0, shown["graph"]


def test_a_first_ingest_killed_after_its_vectors_were_stored_leaves_nothing_the_next_ingest_finds(wrong_kb):
    # the same ingest killed a step earlier, as the OOM killer would: right after its vectors were stored. The first
    # ingest wrote the live collection itself, and its graph before them, so `kb show` said "0 (0 chunks); 161 stored
    # in the vector store" over a graph of the stopped folder, and both stayed until the next ingest replaced them
    from conftest import REPO, make_runtime

    home, folder, shown = wrong_kb
    died = subprocess.run(
        [sys.executable, "-c", KILLED_AFTER_FLUSH, str(folder)],
        env={**os.environ, "EXECUTOR_HOME": str(home)},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert died.returncode == 137, died.stderr
    assert_nothing_stored(shown())

    r = run_cli(home, "ingest", str(folder), "--kb", "wrong")
    assert r.returncode == 0, r.stderr
    ingested = shown()
    assert ingested["documents"] == 2 and ingested["chunks"] == ingested["chunks_stored"] > 0, ingested
    assert ingested["graph"]["entities"] == 3, ingested["graph"]
    rt = make_runtime(home, graph_backend="sql")
    try:  # what the killed ingest wrote is gone: the store holds the live collection and its mark of completion
        live = rt.vectors.collection_name("wrong")
        assert sorted(rt.vectors.client.list_collections()) == [live, f"{live}_DONE"]
    finally:
        rt.close()


@pytest.mark.parametrize("sig, code, said", [("SIGINT", 130, "interrupted"), ("SIGTERM", 143, "terminated (SIGTERM)")])
def test_a_first_ingest_stopped_while_it_writes_its_vectors_leaves_nothing_that_answers(
    wrong_kb, tmp_path, sig, code, said
):
    # Ctrl-C, or `kill` from a service manager, while the vectors are written: the graph was already in (it was
    # written first), under a KB that listed no documents
    from test_damage import run_signalled

    home, folder, shown = wrong_kb
    r = run_signalled(
        home, tmp_path, sig, "executor.stores.vectors:MilvusVectorStore.upsert", "ingest", str(folder), "--kb", "wrong"
    )
    assert r.returncode == code and r.stderr.strip().splitlines()[-1] == f"error: {said}", (r.returncode, r.stderr)
    assert_nothing_stored(shown())
    lookup = run_cli(home, "lookup", "Kestrel", "--kb", "wrong")
    assert "has no documents yet" in last_error_line(lookup, 2)
