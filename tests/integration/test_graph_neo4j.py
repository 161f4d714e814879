"""End to end on a real Neo4j (NEO4J_URI; services/neo4j/start.sh starts one): the command line ingests the sample KB
into it, walks paths between two entities, expands a turn through it and draws `kg` edges from it; and two homes'
KBs in the one Neo4j stay apart."""

import json

import pytest
from conftest import neo4j_env, neo4j_settings, run_cli, unique_kb
from doc_fixtures import write_kb


def cli(home, *args, **env):
    r = run_cli(home, *args, "--json", **neo4j_env(), **env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.fixture
def homes(tmp_path):
    """Two homes on the shared Neo4j, each with a KB name of its own; whatever they left there is dropped."""
    from executor.stores.knowledge_graph_cypher import CypherGraphStore
    from executor.stores.knowledge_graph_drivers import Neo4jDriver

    s = neo4j_settings()  # skips (or fails) here where there is no Neo4j
    sample, other = unique_kb("sample"), unique_kb("runbooks")
    yield (tmp_path / "home", sample), (tmp_path / "other", other)
    store = CypherGraphStore(Neo4jDriver(s["neo4j_uri"], s["neo4j_user"], s["neo4j_password"], s["neo4j_database"]))
    try:
        for kb in (sample, other):
            store.drop_kb(kb)
    finally:
        store.close()


def test_ingest_paths_a_graph_expanded_turn_and_kg_on_neo4j(homes):
    (home, kb), (other_home, other_kb) = homes
    report = cli(home, "ingest", "--kb", kb)
    assert report["graph"]["documents"] == 42 and report["graph"]["relations"] >= 60, report
    shown = cli(home, "kb", "show", kb)
    assert shown["graph"]["relations"] == report["graph"]["relations"]

    found = cli(home, "graph", "path", "ComfyUI", "Kubernetes", "--kb", kb)
    assert found["reachable"] is True
    best = found["paths"][0]
    assert [n["name"] for n in best["nodes"]] == ["ComfyUI", "Docker", "Kubernetes"]
    assert [e["type"] for e in best["edges"]] == ["DEPENDS_ON", "RELATED_TO"]
    assert best["score"] == pytest.approx(0.72)
    far = cli(
        home,
        "graph",
        "path",
        "ComfyUI",
        "Kubernetes",
        "--kb",
        kb,
        "--hops",
        "1",
        "--relations",
        "DEPENDS_ON,RELATED_TO",
    )
    assert far["reachable"] is False and far["nearest"]["source_side"] == far["nearest"]["target_side"] == "Docker"

    # a REFERENCE result (the threshold lowered so the sample's best match grades so) is expanded through the graph
    turn = cli(
        home,
        "ask",
        "my service keeps restarting",
        "--kb",
        kb,
        "--session",
        "neo4j-e2e",
        EXECUTOR_REFERENCE_THRESHOLD="0.15",
    )
    lookup = turn["trace"][0]
    assert (lookup["relevance_level"], lookup["graph"]) == ("REFERENCE", "expanded"), lookup
    assert turn["graph_paths"] and turn["citations"]

    kg = cli(home, "kg", "Does ComfyUI depend on Docker?", "--kb", kb)
    assert kg["errors"] == []
    assert ("ComfyUI", "DEPENDS_ON", "Docker") in {
        (e["source"], e["type"], e["target"]) for e in kg["graph_data"]["edges"]
    }

    # another home's KB in the same Neo4j: its graph is its own, and dropping it leaves the first as it was
    folder = write_kb(
        other_home.parent / "runbooks",
        {
            "web.md": "---\nrelations: [{source: WebApp, type: DEPENDS_ON, target: Docker, weight: 0.9}]\n---\n"
            "# WebApp\nWebApp runs in Docker.",
        },
    )
    assert cli(other_home, "kb", "create", other_kb, "--entities", "Software", "--relations", "DEPENDS_ON")
    assert cli(other_home, "ingest", str(folder), "--kb", other_kb)["graph"]["relations"] == 1
    around = cli(home, "graph", "neighbors", "Docker", "--kb", kb, "--hops", "1")
    assert "WebApp" not in {n["name"] for p in around["paths"] for n in p["nodes"]}
    r = run_cli(home, "graph", "neighbors", "WebApp", "--kb", kb, **neo4j_env())
    assert r.returncode == 2 and "no entity 'WebApp'" in r.stderr
    assert run_cli(other_home, "kb", "drop", other_kb, "--yes", **neo4j_env()).returncode == 0
    assert cli(home, "graph", "path", "ComfyUI", "Kubernetes", "--kb", kb)["paths"][0] == best
