"""Incremental ingest: a changed document replaces its own graph facts, the rest of the graph is left as it was."""

import os
import time

import pytest
from conftest import make_runtime, neo4j_settings, unique_kb
from doc_fixtures import write_kb

from executor.retrieval.ingest import SAMPLE_EXTRACT_CONFIG, ingest

PAGES = {
    "ops/a.md": "---\nentities: [{name: Alpha, type: Software}]\nrelations: "
    "[{source: Alpha, type: DEPENDS_ON, target: Beta, weight: 0.8}]\n---\n# Alpha\nAlpha needs Beta.",
    "ops/b.md": "# Beta\nBeta runs next to Alpha on port 9000.",
    "ops/c.md": "---\nrelations: [{source: Gamma, type: REFERENCES, target: Beta, weight: 0.6}]\n---\n"
    "# Gamma\nGamma is a LoadBalancer for Beta.",
}


def aged(root):
    """Every file dated an hour back, so a re-ingest trusts its recorded state and takes the unchanged pages
    from the catalog instead of reading them (a file modified a moment ago would be read again)."""
    past = time.time() - 3600
    for path in root.rglob("*.md"):
        os.utime(path, (past, past))
    return root


BACKENDS = ["cypher", "sql", "neo4j"]


def runtime(home, backend: str):
    """A runtime whose graph is its embedded FalkorDB ("cypher"), its SQL tables ("sql") or the Neo4j at NEO4J_URI
    that every test shares (its KB names are then the test's own: `unique_kb`)."""
    if backend == "neo4j":
        return make_runtime(home, graph_backend="cypher", **neo4j_settings())
    return make_runtime(home, graph_backend=backend)


def close(rt, backend: str, *kbs: str) -> None:
    try:
        if backend == "neo4j":
            for kb in kbs:
                rt.graph.drop_kb(kb)
    finally:
        rt.close(stop_graph_server=True)


def graph_of(rt, kb: str) -> dict:
    """The stored graph as plain sets (created_at left out: it says when a row was written, not what it holds)."""
    data = rt.graph.read_kb(kb)
    return {
        "entities": sorted((e["key"], e["name"], e["type"], tuple(e["aliases"])) for e in data.entities.values()),
        "documents": sorted((d["doc_key"], d["title"], d["domain"]) for d in data.documents),
        "mentions": sorted((m["doc"], m["key"], m["count"]) for m in data.mentions),
        "relations": sorted(
            (r["type"], r["s"], r["t"], r["weight"], tuple(sorted(r["sources"]))) for r in data.relations
        ),
    }


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_changed_page_replaces_its_own_graph_facts_only(tmp_path, backend):
    kb_dir = aged(write_kb(tmp_path / "kb", PAGES))
    rt, fresh = runtime(tmp_path / "home", backend), runtime(tmp_path / "fresh", backend)
    small, other = unique_kb("small"), unique_kb("fresh")
    try:
        first = ingest(rt, kb_dir, small, progress=False, extract_config=SAMPLE_EXTRACT_CONFIG)
        assert first.graph_written == first.graph  # a first ingest loads the graph whole

        again = ingest(rt, kb_dir, small, progress=False)
        assert again.graph == first.graph
        assert again.graph_written == {"entities": 0, "documents": 0, "mentions": 0, "relations": 0}

        # c.md now points Gamma at Delta instead of Beta, and no longer says LoadBalancer
        write_kb(
            kb_dir,
            {
                "ops/c.md": "---\nrelations: [{source: Gamma, type: REFERENCES, target: Delta, weight: 0.7}]"
                "\n---\n# Gamma\nGamma fronts Delta."
            },
        )
        os.utime(kb_dir / "ops" / "c.md", (time.time() - 1800, time.time() - 1800))
        changed = ingest(rt, kb_dir, small, progress=False)
        assert (changed.changed, changed.unchanged) == (1, 2)
        paths = {p.summary() for p in rt.graph.navigate(small, "Gamma", 1)}
        assert "Gamma -REFERENCES-> Delta" in paths and "Gamma -REFERENCES-> Beta" not in paths
        assert rt.graph.entity(small, "LoadBalancer") is None  # no page mentions it any more
        assert "ops/c.md" not in rt.graph.documents_mentioning(small, ["Beta"])
        # what was written is a small part of the graph: the changed page's facts
        assert 0 < sum(changed.graph_written.values()) < sum(changed.graph.values())

        # the same folder ingested from nothing gives the same graph
        ingest(fresh, kb_dir, other, progress=False, extract_config=SAMPLE_EXTRACT_CONFIG)
        assert graph_of(rt, small) == graph_of(fresh, other)
        assert changed.graph == fresh.graph.counts(other)

        (kb_dir / "ops" / "c.md").unlink()
        removed = ingest(rt, kb_dir, small, progress=False)
        assert removed.removed == 1 and rt.graph.stats(small)["documents"] == 2
        assert rt.graph.entity(small, "Gamma") is None and rt.graph.entity(small, "Delta") is None
    finally:
        try:
            close(rt, backend, small)
        finally:
            close(fresh, backend, other)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_unchanged_relation_keeps_its_row(tmp_path, backend):
    """Unchanged facts are not rewritten: a relation no changed page sourced keeps its first created_at."""
    kb_dir = write_kb(tmp_path / "kb", PAGES)
    rt = runtime(tmp_path / "home", backend)
    small = unique_kb("small")
    try:
        ingest(rt, kb_dir, small, progress=False, extract_config=SAMPLE_EXTRACT_CONFIG)

        def created(source: str, target: str):
            if backend == "sql":
                from sqlalchemy import text

                with rt.db.engine.connect() as c:
                    return c.execute(
                        text(
                            "SELECT r.created_at FROM graph_relation r JOIN graph_entity a ON a.id = r.source_id "
                            "JOIN graph_entity b ON b.id = r.target_id "
                            "WHERE a.key = :s AND b.key = :t AND r.type = 'DEPENDS_ON'"
                        ),
                        {"s": source, "t": target},
                    ).scalar_one()
            return rt.graph.driver.run(
                "MATCH (:Entity {kb: $kb, key: $s})-[r:DEPENDS_ON]->(:Entity {key: $t}) RETURN r.created_at AS at",
                {"kb": small, "s": source, "t": target},
            )[0]["at"]

        before = created("alpha", "beta")
        write_kb(kb_dir, {"ops/c.md": PAGES["ops/c.md"] + "\nGamma also talks to Epsilon."})
        ingest(rt, kb_dir, small, progress=False)
        assert created("alpha", "beta") == before
    finally:
        close(rt, backend, small)
