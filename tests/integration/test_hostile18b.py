"""Round eighteen (b) of the hostile pass (issue 30): what it found of severity 6 or worse, one test per case.

Each was written as `xfail(strict=True)` with its finding's number in evals/review/hostile18b-findings.md, seen
failing on the code before its fix, and its marker removed with the fix. Real components throughout:
the command line as a subprocess, psycopg and PyMySQL against a port that accepts and never answers, the shared
Neo4j behind a forwarder this test can freeze, the real file system, Milvus Lite and the embedded FalkorDB.
"""

import os
import shutil
import socket
import threading
import time
from contextlib import contextmanager

import pytest
from conftest import neo4j_env, run_cli, write_pages

from executor.retrieval.sources import SourceLimits, discover, load_source

pytestmark = pytest.mark.timeout(400)


@contextmanager
def silent_server():
    """A TCP port whose connections the kernel accepts and nobody ever answers (a server stopped with SIGSTOP, a
    firewall that drops the replies, a proxy whose backend hung)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()


def not_hung(home, *args: str, **env: str):
    """The command's result, or the test failed: it was still waiting after 90 s (psycopg's own bound is 130 s)."""
    started = time.monotonic()
    try:
        return run_cli(home, *args, timeout=90, **env)
    except Exception as exc:  # subprocess.TimeoutExpired
        pytest.fail(f"`{' '.join(args[:2])}` still waiting after {time.monotonic() - started:.0f} s: {exc}")


class Forwarder:
    """A TCP forwarder to a real server that can be frozen: connections stay open, and nothing passes either way."""

    def __init__(self, port: int):
        self.target = port
        self.frozen = threading.Event()
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            self.sockets += [client, upstream]
            threading.Thread(target=self._pipe, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client), daemon=True).start()

    def _pipe(self, a: socket.socket, b: socket.socket):
        try:
            while data := a.recv(65536):
                while self.frozen.is_set():
                    time.sleep(0.05)
                b.sendall(data)
        except OSError:
            pass

    def close(self):
        self.frozen.clear()
        for s in [self.listener, *self.sockets]:
            s.close()


# -- finding 1: a database server that accepts and never answers ------------------------------------------------
@pytest.mark.parametrize("scheme", ["postgresql+psycopg", "mysql+pymysql"])
def test_a_database_server_that_never_answers_is_one_line_not_a_hang(tmp_path, scheme):
    with silent_server() as port:
        url = f"{scheme}://executor@127.0.0.1:{port}/test"
        r = not_hung(tmp_path / "home", "kb", "list", EXECUTOR_DATABASE_URL=url)
    assert r.returncode == 1, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and f"127.0.0.1:{port}" in r.stderr, r.stderr


# -- finding 2: a Neo4j that stops answering mid-session ----------------------------------------------------------
def test_a_neo4j_that_stops_answering_fails_within_the_graph_timeout():
    from urllib.parse import urlsplit

    from executor.core.errors import BackendError
    from executor.stores.knowledge_graph_drivers import Neo4jDriver

    env = neo4j_env()
    forwarder = Forwarder(urlsplit(env["NEO4J_URI"]).port or 7687)
    driver = Neo4jDriver(
        f"bolt://127.0.0.1:{forwarder.port}", env["NEO4J_USER"], env.get("NEO4J_PASSWORD"), None, timeout_s=3
    )
    try:
        assert driver.run("RETURN 1 AS x") == [{"x": 1}]
        forwarder.frozen.set()  # the server hangs (SIGSTOP, a swap storm), its connection open
        started = time.monotonic()
        with pytest.raises(BackendError):
            driver.run("RETURN 2 AS x")
        waited = time.monotonic() - started
    finally:
        forwarder.close()
        driver.close()
    # EXECUTOR_GRAPH_TIMEOUT_S=3, and 5 s to connect: a read is given up well before half a minute
    assert waited < 30, f"waited {waited:.0f} s for a server that does not answer"


# -- finding 3: a folder swapped for a symbolic link between the walk and the read ---------------------------------
def test_a_folder_swapped_for_a_link_after_the_walk_is_not_read(tmp_path):
    root = write_pages(tmp_path / "kb", {"team/notes.md": "# Team notes\n\nNothing secret here.\n"})
    outside = write_pages(tmp_path / "private", {"team/notes.md": "# Private\n\nthe root password is hunter2\n"})
    found = discover(root)
    # another user of a shared docs folder swaps `team/` for a link once the walk has listed it
    shutil.rmtree(root / "team")
    os.symlink(outside / "team", root / "team")
    (source,) = found.files
    try:
        text = load_source(source, SourceLimits()).body
    except OSError:
        return  # refused: what should happen
    assert "hunter2" not in text, f"{source.doc_key} was read from outside the folder: {text!r}"


# -- finding 4: a graph backend that holds no graph for the KB ----------------------------------------------------
@pytest.fixture(scope="module")
def falkordb_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("h18b-falkor")
    r = run_cli(home, "ingest", "--json")
    assert r.returncode == 0, r.stderr
    run_cli(home, "graph", "stop")
    return home


def test_a_graph_backend_without_the_kbs_graph_says_so(falkordb_home):
    # the sample KB's graph (54 entities) was built in the embedded FalkorDB; the user then sets the SQL backend
    r = run_cli(falkordb_home, "graph", "neighbors", "PgBouncer", EXECUTOR_GRAPH_BACKEND="sql")
    assert "no entity 'PgBouncer'" not in r.stderr, r.stderr
    assert r.returncode == 1 and "ingest" in r.stderr, r.stderr


def test_query_knowledge_graph_on_a_backend_without_the_kbs_graph_says_so(falkordb_home):
    # as a graph server that is down: the KB's error names what is wrong, never a result without its graph
    r = run_cli(falkordb_home, "kg", "PgBouncer connection pool", EXECUTOR_GRAPH_BACKEND="sql")
    assert r.returncode == 1, r.stdout
    assert "the graph of knowledge base 'sample' is not in this graph backend" in r.stderr, r.stderr


# -- finding 9: Neo4j's reason on the line after its colon ---------------------------------------------------------
def test_a_neo4j_that_cannot_be_reached_says_why():
    from executor.core.errors import BackendError
    from executor.stores.knowledge_graph_drivers import Neo4jDriver

    with silent_server() as port:
        pass  # the port is closed again: nothing listens on it
    driver = Neo4jDriver(f"bolt://127.0.0.1:{port}", "neo4j", "x", None, timeout_s=3)
    with pytest.raises(BackendError) as failed:
        driver.run("RETURN 1 AS x")
    driver.close()
    assert "Connection refused" in str(failed.value), str(failed.value)


def test_a_checkpoint_server_that_never_answers_is_one_line_not_a_hang(tmp_path):
    """Hostile19 finding 5: the checkpoint URL's connection was unbounded (psycopg's 130 s): `ask` sat silent for
    136 s, where the database URL's says so in about 10 s."""
    with silent_server() as port:
        url = f"postgresql://executor@127.0.0.1:{port}/test"
        r = not_hung(tmp_path / "home", "ask", "ERR_TIMEOUT 是什么？", EXECUTOR_CHECKPOINT_URL=url)
    assert r.returncode == 1, r.stderr
    assert r.stderr.strip().splitlines() == [r.stderr.strip()] and "checkpoint database unavailable" in r.stderr
