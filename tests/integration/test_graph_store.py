"""The graph store on real engines: FalkorDB (embedded server from the wheel), the SQL backend on SQLite and on
Postgres (when a server answers), and Neo4j when NEO4J_URI is set (services/neo4j/start.sh starts one)."""

import os
import time
import uuid

import numpy as np
import pytest
from conftest import known_graph_data, unique_kb

from executor.core.errors import BackendError, InputError
from executor.stores.falkordb_server import FalkorDBServer
from executor.stores.knowledge_graph import GraphData
from executor.stores.knowledge_graph_cypher import RETIRED_PREFIX, STAGING_PREFIX, CypherGraphStore
from executor.stores.knowledge_graph_memory import GraphSnapshot

# names of this run's own: the Neo4j at NEO4J_URI is shared by every test process on the machine
KB, OTHER = unique_kb("known"), unique_kb("other")


class InMemoryNavigate:
    """A store whose `navigate` runs on the in-memory snapshot of its own graph (what the traversal cache
    serves), read afresh for every call; everything else is the store's."""

    def __init__(self, store):
        self.store = store

    def __getattr__(self, name):
        return getattr(self.store, name)

    def navigate(self, kb, entity, max_hops=2, relation_filter=None, max_paths=20, max_nodes_per_hop=25):
        snapshot = GraphSnapshot.load(self.store, kb, 1_000_000)
        assert snapshot is not None
        return snapshot.navigate(entity, max_hops, relation_filter, max_paths, max_nodes_per_hop)


@pytest.fixture(params=["falkordb", "sql-sqlite", "sql-postgres", "neo4j", "memory-falkordb", "memory-sqlite"])
def store(request):
    if request.param == "falkordb":
        yield request.getfixturevalue("falkor_store")
        return
    if request.param.startswith("memory-"):
        engine = request.param[7:]
        yield InMemoryNavigate(
            request.getfixturevalue("falkor_store" if engine == "falkordb" else f"sql_store_{engine}")
        )
        return
    if request.param.startswith("sql-"):
        yield request.getfixturevalue("sql_store_" + request.param[4:])
        return
    s = request.getfixturevalue("neo4j_store")
    yield s
    for kb in (KB, OTHER):
        s.drop_kb(kb)


@pytest.fixture
def known(store):
    store.replace_kb(KB, known_graph_data())
    return store


def summaries(paths):
    return [(p.summary(), round(p.score, 4)) for p in paths]


def test_navigate_returns_whole_paths_best_first(known):
    paths = known.navigate(KB, "ComfyUI", max_hops=2)
    assert summaries(paths) == [
        ("ComfyUI -DEPENDS_ON-> Docker", 0.9),
        ("ComfyUI -DEPENDS_ON-> Docker -RELATED_TO-> Kubernetes", 0.72),
        ("ComfyUI -DEPENDS_ON-> Docker <-DERIVED_FROM- Helm", 0.63),
        ("ComfyUI -REFERENCES-> Nginx", 0.5),
        ("ComfyUI <-CONFLICTS_WITH- Redis", 0.4),
    ]
    assert [e.type for e in paths[1].edges] == ["DEPENDS_ON", "RELATED_TO"]
    assert [n.name for n in paths[1].nodes] == ["ComfyUI", "Docker", "Kubernetes"]


def test_navigate_is_cycle_free_and_reaches_each_node_once(known):
    paths = known.navigate(KB, "Docker", max_hops=4, max_paths=50)
    ends = [p.nodes[-1].name for p in paths]
    # every entity connected to Docker, each reached once (an empty answer must fail here)
    assert sorted(ends) == ["ComfyUI", "Helm", "Kubernetes", "Nginx", "Redis"]
    for p in paths:
        names = [n.name for n in p.nodes]
        assert len(names) == len(set(names)), names


def test_entity_names_match_case_insensitively(known):
    assert summaries(known.navigate(KB, "comfyui", 1)) == summaries(known.navigate(KB, "ComfyUI", 1))


def test_relation_filter(known):
    paths = known.navigate(KB, "ComfyUI", max_hops=3, relation_filter=["depends_on", "RELATED_TO"])
    assert summaries(paths) == [
        ("ComfyUI -DEPENDS_ON-> Docker", 0.9),
        ("ComfyUI -DEPENDS_ON-> Docker -RELATED_TO-> Kubernetes", 0.72),
        # edges are walked both ways; the REFERENCES edge ComfyUI -> Nginx is filtered out
        ("ComfyUI -DEPENDS_ON-> Docker -RELATED_TO-> Kubernetes <-DEPENDS_ON- Nginx", 0.36),
    ]


def test_paths_between_best_first(known):
    found = known.navigate_between(KB, "ComfyUI", "Kubernetes", max_hops=3)
    assert found.reachable
    assert summaries(found.paths) == [
        ("ComfyUI -DEPENDS_ON-> Docker -RELATED_TO-> Kubernetes", 0.72),
        ("ComfyUI -DEPENDS_ON-> Docker <-DERIVED_FROM- Helm <-REFERENCES- Kubernetes", 0.378),
        ("ComfyUI -REFERENCES-> Nginx -DEPENDS_ON-> Kubernetes", 0.25),
    ]
    assert len(known.navigate_between(KB, "ComfyUI", "Kubernetes", max_hops=3, max_paths=2).paths) == 2


def test_unreachable_is_reported_without_invented_paths(known):
    isolated = known.navigate_between(KB, "ComfyUI", "Isolated", max_hops=4)
    assert (isolated.reachable, isolated.paths) == (False, [])
    too_far = known.navigate_between(KB, "Redis", "Helm", max_hops=2)
    assert (too_far.reachable, too_far.paths) == (False, [])
    filtered = known.navigate_between(KB, "ComfyUI", "Helm", max_hops=4, relation_filter=["CONFLICTS_WITH"])
    assert not filtered.reachable
    assert known.navigate(KB, "Isolated", 2) == []


def test_unknown_entities_and_bad_bounds_are_clear_errors(known):
    with pytest.raises(InputError, match="no entity 'Nope'"):
        known.navigate(KB, "Nope")
    with pytest.raises(InputError, match="no entity 'Nope'"):
        known.navigate_between(KB, "ComfyUI", "Nope")
    with pytest.raises(InputError, match="same entity"):
        known.navigate_between(KB, "ComfyUI", "comfyui")
    for hops in (0, 5, "2", 2.0, True):
        with pytest.raises(InputError, match="hops must be a whole number from 1 to 4"):
            known.navigate(KB, "ComfyUI", max_hops=hops)
    with pytest.raises(InputError, match="empty"):
        known.navigate(KB, "   ")


@pytest.mark.parametrize(
    "relation",
    ["DEPENDS_ON]-(x) DETACH DELETE x //", "DEPENDS_ON|MENTIONS", "MENTIONS", "depends on", "*1..100"],
)
def test_relation_filters_come_from_a_whitelist(known, relation):
    with pytest.raises(InputError, match="unknown relation type"):
        known.navigate(KB, "ComfyUI", relation_filter=[relation])
    assert known.stats(KB)["relations"] == len(known_graph_data().relations)


def test_entity_names_are_parameters_not_cypher(known):
    hostile = "x'}) MATCH (n) DETACH DELETE n //"
    data = known_graph_data()
    data.add_entity(hostile, "Concept")
    data.relations.append(
        {"type": "RELATED_TO", "s": data.add_entity(hostile), "t": "docker", "weight": 0.5, "sources": []}
    )
    known.replace_kb(KB, data)
    assert summaries(known.navigate(KB, hostile, 1)) == [(f"{hostile} -RELATED_TO-> Docker", 0.5)]
    with pytest.raises(InputError):
        known.navigate(KB, 'Nope"}) DETACH DELETE n //')
    assert known.stats(KB)["entities"] == 8


def test_replace_is_idempotent_and_scoped_to_its_kb(known):
    before = known.stats(KB)
    known.replace_kb(KB, known_graph_data())
    assert known.stats(KB) == before == {"entities": 7, "documents": 1, "relations": 7}
    known.replace_kb(OTHER, known_graph_data())
    known.drop_kb(OTHER)
    assert known.stats(OTHER) == {"entities": 0, "documents": 0, "relations": 0}
    assert known.stats(KB) == before


def dense_graph_data() -> GraphData:
    rng = np.random.default_rng(7)
    data = GraphData()
    names = [f"n{i}" for i in range(2000)]
    for n in names:
        data.add_entity(n, "Concept")
    src, dst = rng.integers(0, 2000, 40_000), rng.integers(0, 2000, 40_000)
    types = ["DEPENDS_ON", "REFERENCES", "RELATED_TO", "CO_OCCURS"]
    data.relations = [
        {"type": types[i % 4], "s": names[a], "t": names[b], "weight": float(w), "sources": []}
        for i, (a, b, w) in enumerate(zip(src, dst, rng.uniform(0.1, 1.0, 40_000)))
        if a != b
    ]
    return data


def test_dense_graph_stays_within_caps(falkor_store, falkordb_server):
    """2,000 nodes and 40,000 edges: a 3-hop navigate stays within max_paths and max_nodes_per_hop."""
    falkor_store.replace_kb("dense", dense_graph_data())
    memory = falkordb_server_memory(falkordb_server)
    paths = falkor_store.navigate("dense", "n0", max_hops=3, max_paths=100, max_nodes_per_hop=20)
    grown = falkordb_server_memory(falkordb_server) - memory
    # ~40 neighbours per node means ~64,000 three-hop walks; the capped search holds a few hundred rows
    assert grown < 32 * 1024 * 1024
    check_dense_caps(falkor_store, paths)


@pytest.mark.parametrize("engine", ["sqlite", "postgres", "neo4j"])
def test_dense_graph_stays_within_caps_elsewhere(request, engine):
    store = request.getfixturevalue("neo4j_store" if engine == "neo4j" else f"sql_store_{engine}")
    kb = unique_kb("dense")  # the Neo4j server is shared by every test
    try:
        store.replace_kb(kb, dense_graph_data())
        check_dense_caps(store, store.navigate(kb, "n0", max_hops=3, max_paths=100, max_nodes_per_hop=20), kb)
    finally:
        store.drop_kb(kb)


def check_dense_caps(store, paths, kb="dense"):
    assert 0 < len(paths) <= 100
    per_hop: dict[int, set] = {}
    for p in paths:
        assert 1 <= p.hops <= 3
        per_hop.setdefault(p.hops, set()).add(p.nodes[-1].name)
        assert p.score == pytest.approx(np.prod([e.weight for e in p.edges]), rel=1e-6)
    assert all(len(nodes) <= 20 for nodes in per_hop.values())
    assert set(per_hop) == {1, 2, 3}  # the caps limit width, not depth
    between = store.navigate_between(kb, "n0", "n1", max_hops=3, max_paths=5)
    assert between.reachable and len(between.paths) == 5
    assert [p.score for p in between.paths] == sorted((p.score for p in between.paths), reverse=True)


def falkordb_server_memory(server: FalkorDBServer) -> int:
    import redis

    client = redis.Redis(unix_socket_path=str(server.socket_path))
    try:
        return int(client.info("memory")["used_memory"])
    finally:
        client.close()


def test_server_persists_across_a_restart_and_is_reused(tmp_path):
    from executor.stores.knowledge_graph_drivers import FalkorDriver

    server = FalkorDBServer(tmp_path / "graph")
    socket = server.ensure_running()
    pid = server.pid()
    assert FalkorDBServer(tmp_path / "graph").ensure_running() == socket and server.pid() == pid  # reused
    store = CypherGraphStore(FalkorDriver("executor", socket_path=str(socket)))
    store.replace_kb(KB, known_graph_data())
    store.close()
    assert server.stop() is True and server.pid() is None and not server.ping()
    server.ensure_running()
    assert server.pid() != pid
    store = CypherGraphStore(FalkorDriver("executor", socket_path=str(server.socket_path)))
    try:
        assert summaries(store.navigate(KB, "ComfyUI", 1))[0] == ("ComfyUI -DEPENDS_ON-> Docker", 0.9)
    finally:
        store.close()
        server.stop()
    assert server.stop() is False  # stopping a stopped server is fine


def test_server_that_cannot_start_says_why(tmp_path):
    blocker = tmp_path / "graph"
    blocker.write_text("a file where the graph folder should be")
    with pytest.raises(BackendError, match="cannot start FalkorDB"):
        FalkorDBServer(blocker).ensure_running()


def test_a_dead_server_is_a_one_line_error(tmp_path):
    from executor.stores.knowledge_graph_drivers import FalkorDriver

    start = time.monotonic()
    with pytest.raises(BackendError, match="graph unavailable") as err:
        driver = FalkorDriver("executor", socket_path=str(tmp_path / f"{uuid.uuid4().hex}.sock"))
        CypherGraphStore(driver).navigate(KB, "ComfyUI")
    assert "\n" not in str(err.value)
    assert time.monotonic() - start < 15


def test_a_server_whose_folder_was_deleted_is_replaced_not_leaked(tmp_path):
    import shutil

    folder = tmp_path / "graph"
    server = FalkorDBServer(folder)
    server.ensure_running()
    orphan = server.pid()
    shutil.rmtree(folder)  # what "delete EXECUTOR_HOME to start over" does to a running server
    server.ensure_running()
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _alive(orphan):
            time.sleep(0.1)
        assert not _alive(orphan) and server.pid() not in (None, orphan)
    finally:
        server.stop()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie is dead for our purposes
        return fh.read().split()[2] != "Z"


def test_control_characters_in_values_do_not_break_the_load(known):
    """The falkordb client pastes parameters into the query text: one NUL made the server reject the load."""
    if not hasattr(known, "driver"):
        pytest.skip("Cypher drivers only: the SQL graph store binds parameters, it never pastes them")
    data = known_graph_data()
    data.documents[0]["title"] = "Known\x00 title\x1b]8;;evil\x07 with controls"
    data.add_entity("Nul\x00Name", "Software")
    known.replace_kb(KB, data)
    assert known.stats(KB) == {"entities": 8, "documents": 1, "relations": 7}
    titles = known.driver.run("MATCH (d:Document {kb: $kb}) RETURN d.title AS t", {"kb": KB})
    assert titles == [{"t": "Known title]8;;evil with controls"}]
    assert known.entity(KB, "Nul\x00Name") is not None  # the same cleaning applies to what is looked up


class _FailingWrites:
    """A driver that fails the n-th write after `armed` is set: a load that breaks half-way."""

    def __init__(self, driver, fail_at: int):
        self.driver, self.dialect, self.description = driver, driver.dialect, driver.description
        self.fail_at, self.writes = fail_at, 0

    def run(self, query, params=None, *, write=False):
        if write and "UNWIND" in query:
            self.writes += 1
            if self.writes == self.fail_at:
                raise BackendError("graph query failed: injected")
        return self.driver.run(query, params, write=write)

    def close(self):
        self.driver.close()


@pytest.mark.parametrize("fail_at", [1, 3])
def test_a_load_that_fails_half_way_keeps_the_old_graph(known, fail_at):
    if not hasattr(known, "driver"):
        pytest.skip("Cypher drivers only: the SQL graph store loads a KB's graph in one transaction")
    before = known.stats(KB)
    broken = CypherGraphStore(_FailingWrites(known.driver, fail_at))
    with pytest.raises(BackendError, match="injected"):
        broken.replace_kb(KB, known_graph_data())
    assert known.stats(KB) == before == {"entities": 7, "documents": 1, "relations": 7}
    assert summaries(known.navigate(KB, "ComfyUI", 1))[0] == ("ComfyUI -DEPENDS_ON-> Docker", 0.9)
    leftovers = known.driver.run(
        "MATCH (n) WHERE n.kb IN [$staging, $retired] RETURN count(n) AS n",
        {"staging": STAGING_PREFIX + KB, "retired": RETIRED_PREFIX + KB},
    )
    # nothing half-built of this KB is left behind (other tests' loads into the shared Neo4j may be under way)
    assert leftovers == [{"n": 0}]


def _decoy(*argv: str):
    """An unrelated process whose command line mentions `argv` (a user's editor, a grep...)."""
    import subprocess
    import sys

    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", *argv])


def test_orphan_clean_up_spares_a_process_that_merely_mentions_the_socket(tmp_path):
    import shutil

    folder = tmp_path / "graph"
    server = FalkorDBServer(folder)
    server.ensure_running()
    decoy = _decoy(f"unixsocket:{server.socket_path}")
    shutil.rmtree(folder)  # the running server is now an orphan, found by its title
    try:
        server.ensure_running()
        assert decoy.poll() is None  # not SIGTERMed
        assert server.ping()
    finally:
        server.stop()
        decoy.kill()
        decoy.wait()


def test_a_stale_pid_file_pointing_at_a_reused_pid_is_handled(tmp_path):
    server = FalkorDBServer(tmp_path / "graph")
    server.ensure_running()
    server.stop()
    decoy = _decoy(f"unixsocket:{server.socket_path}")
    server.pid_path.write_text(f"{decoy.pid}\n")  # the pid was reused by another program
    try:
        assert server.stop() is False  # `graph stop` does not fail, and does not signal the decoy
        server.pid_path.write_text(f"{decoy.pid}\n")
        server.ensure_running()  # starts a real server instead of "pid ... is not answering"
        assert server.pid() not in (None, decoy.pid) and server.ping()
        assert server.stop() is True
        assert decoy.poll() is None
    finally:
        decoy.kill()
        decoy.wait()


def test_a_long_lived_process_restarts_the_embedded_server_when_it_died(tmp_path):
    import signal

    from conftest import make_runtime

    rt = make_runtime(tmp_path / "home")
    try:
        rt.graph.replace_kb(KB, known_graph_data())
        pid = rt.graph_server.pid()
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.05)
        # the same runtime (a chat, Studio) answers again: the server is restarted, the graph reloaded from its AOF
        assert summaries(rt.graph.navigate(KB, "ComfyUI", 1))[0] == ("ComfyUI -DEPENDS_ON-> Docker", 0.9)
        assert rt.graph_server.pid() not in (None, pid)
    finally:
        rt.close(stop_graph_server=True)


def test_the_bolt_port_is_refused_unless_its_exposure_is_accepted(tmp_path):
    server = FalkorDBServer(tmp_path / "graph", bolt_port=23999)
    with pytest.raises(BackendError, match="cannot be limited to 127.0.0.1"):
        server.ensure_running()
    assert server.pid() is None


def test_unreachable_pairs_say_how_close_the_two_sides_come(known):
    """Seed 001 E1.2: no path within the bound -> the nearest pair the two sides reach, or null if they never meet."""
    # Redis -CONFLICTS_WITH- ComfyUI -DEPENDS_ON- Docker -DERIVED_FROM- Helm: 3 hops, beyond a bound of 2
    far = known.navigate_between(KB, "redis", "Helm", max_hops=2)
    assert not far.reachable and far.paths == []
    assert far.nearest.model_dump() == {
        "source_side": "ComfyUI",
        "target_side": "Docker",
        "hops_each": 1,
        "source_hops": 1,
        "target_hops": 1,
        "gap": 1,
    }
    assert far.summary(2) == (
        "Redis and Helm are not connected within 2 hops. Nearest: Redis reaches ComfyUI in 1 hop, "
        "Helm reaches Docker in 1 hop, and those two are directly related."
    )
    # ComfyUI and Kubernetes are two hops apart through Docker (0.9 x 0.8) or Nginx: both sides reach Docker
    meet = known.navigate_between(KB, "ComfyUI", "Kubernetes", max_hops=1)
    assert meet.nearest.model_dump() == {
        "source_side": "Docker",
        "target_side": "Docker",
        "hops_each": 1,
        "source_hops": 1,
        "target_hops": 1,
        "gap": 0,
    }
    assert known.navigate_between(KB, "ComfyUI", "Isolated", max_hops=4).nearest is None
    only_conflicts = known.navigate_between(KB, "ComfyUI", "Helm", max_hops=2, relation_filter=["CONFLICTS_WITH"])
    assert only_conflicts.nearest is None
    assert known.navigate_between(KB, "ComfyUI", "Kubernetes", max_hops=2).nearest is None  # reachable
