"""Building the graph at ingest, rule-based extraction, and graph_expand on the real stores."""

import pytest
from conftest import make_runtime, neo4j_settings, unique_kb
from doc_fixtures import write_kb

from executor.core.relevance import Level
from executor.prompts.results import expansion_text
from executor.retrieval.expansion import fusion_lambda, should_expand
from executor.retrieval.extraction import EntityExtractor
from executor.retrieval.ingest import SAMPLE_EXTRACT_CONFIG, ingest


def names(mentions):
    return {(m.name, m.type) for m in mentions}


def test_extraction_finds_names_inside_chinese_text():
    x = EntityExtractor({"docker": ("Docker", "Software"), "k8s": ("Kubernetes", "Software")})
    found = names(x.extract("ComfyUI端口 8188 被占用时，先看 docker ps；k8s 上见 https://wiki.example.com/comfy。"))
    assert {
        ("ComfyUI", "Software"),
        ("8188", "Port"),
        ("Docker", "Software"),
        ("Kubernetes", "Software"),
        ("https://wiki.example.com/comfy", "URL"),
    } <= found


def test_extraction_patterns_and_what_they_leave_alone():
    x = EntityExtractor({})
    found = names(
        x.extract(
            "Config lives in /etc/nginx/nginx.conf; the app listens on localhost:5432 and returns ERR_POOL_EXHAUSTED "
            "from HikariCP. SQLTransientConnectionException, URLs, OK and HTTP are not products."
        )
    )
    assert {
        ("/etc/nginx/nginx.conf", "Path"),
        ("5432", "Port"),
        ("ERR_POOL_EXHAUSTED", "ErrorCode"),
        ("HikariCP", "Software"),
    } == found


def test_extraction_is_limited_to_the_kbs_entity_types():
    x = EntityExtractor({}, allowed_types=["Software"])
    assert names(x.extract("ComfyUI on port 8188, see /data/comfyui/models")) == {("ComfyUI", "Software")}


def test_ingest_builds_the_sample_graph(sample_rt):
    graph = sample_rt.graph
    stats = graph.stats("sample")
    assert stats["documents"] == 42 and stats["entities"] >= 40 and stats["relations"] >= 60
    paths = {p.summary(): p.score for p in graph.navigate("sample", "ComfyUI", 1)}
    assert paths["ComfyUI -DEPENDS_ON-> Docker"] == pytest.approx(0.9)
    # found by pattern in Chinese text: "端口 8188"
    assert any(s.startswith("ComfyUI") and s.endswith("8188") for s in paths)
    docs = graph.documents_mentioning("sample", ["ComfyUI"])
    assert "deployment/comfyui-deployment.md" in docs


@pytest.mark.parametrize("graph", ["falkordb", "neo4j"])
def test_graph_ingest_is_idempotent_and_follows_the_documents(tmp_path, graph):
    kb_dir = write_kb(
        tmp_path / "kb",
        {
            "ops/a.md": "---\nentities: [{name: Alpha, type: Software}]\nrelations: "
            "[{source: Alpha, type: DEPENDS_ON, target: Beta, weight: 0.8}]\n---\n# Alpha\nAlpha needs Beta.",
            "ops/b.md": "# Beta\nBeta runs next to Alpha on port 9000.",
            "ops/c.md": "# Gamma\nGamma is a LoadBalancer for Beta.",
        },
    )
    # the Neo4j at NEO4J_URI is shared by every test: a KB name of this test's own, dropped at the end
    rt = make_runtime(tmp_path / "home", **(neo4j_settings() if graph == "neo4j" else {}))
    small = unique_kb("small")
    try:
        first = ingest(rt, kb_dir, small, progress=False, extract_config=SAMPLE_EXTRACT_CONFIG)
        again = ingest(rt, kb_dir, small, progress=False)
        assert first.graph == again.graph and rt.graph.stats(small) == {
            "entities": again.graph["entities"],
            "documents": 3,
            "relations": again.graph["relations"],
        }
        assert "ops/b.md" in rt.graph.documents_mentioning(small, ["Alpha"])  # dictionary match, no front matter
        (kb_dir / "ops" / "c.md").unlink()
        third = ingest(rt, kb_dir, small, progress=False)
        assert rt.graph.stats(small)["documents"] == 2 and third.graph["documents"] == 2
        assert rt.graph.entity(small, "LoadBalancer") is None
    finally:
        try:
            if graph == "neo4j":
                rt.graph.drop_kb(small)
        finally:
            rt.close(stop_graph_server=True)


def test_a_kb_without_graph_config_gets_no_graph(tmp_path):
    kb_dir = write_kb(tmp_path / "kb", {"a.md": "# A\nComfyUI text."})
    rt = make_runtime(tmp_path / "home")
    try:
        report = ingest(rt, kb_dir, "plain", progress=False)
        assert report.graph is None
        assert "graph" not in rt.__dict__  # no server was started for it
    finally:
        rt.close()


def test_fusion_lambda_follows_the_calibrated_score():
    from executor.core.settings import Thresholds

    t = Thresholds(highly_relevant_threshold=0.6, reference_threshold=0.3)
    assert [fusion_lambda(s, t) for s in (0.95, 0.6, 0.5999, 0.3, 0.2999, None)] == [0.8, 0.8, 0.5, 0.5, 0.3, 0.3]


def test_expansion_never_adds_what_the_grader_calls_irrelevant(sample_rt):
    result = sample_rt.lookup_service.lookup("my service keeps restarting", "expand-0")
    assert result.relevance_level == Level.REFERENCE and should_expand(result, 5)
    expansion = sample_rt.expander.expand(result)
    # the graph reaches documents from these entities, but all of them score below REFERENCE for this query
    assert expansion.status == "nothing_new" and expansion.documents == []
    assert expansion.details["below_reference"] > 0


def test_expansion_after_a_reference_result(sample_rt, monkeypatch):
    # the mechanics of expansion, with a REFERENCE bar low enough that documents the graph reaches count as related
    monkeypatch.setattr(sample_rt.settings, "reference_threshold", 0.15)
    result = sample_rt.lookup_service.lookup("my service keeps restarting", "expand-1")
    assert result.relevance_level == Level.REFERENCE and should_expand(result, 5)
    expansion = sample_rt.expander.expand(result)
    assert expansion.status == "expanded", expansion.message
    returned = {d.doc_key for d in result.documents}
    assert expansion.documents and not returned & {d.doc_key for d in expansion.documents}
    assert all(d.content for d in expansion.documents)
    assert expansion.paths and all(" -" in p or " <-" in p for p in expansion.paths)
    text = expansion_text(expansion)
    assert "graph_expansion: expanded" in text and "lambda" not in text and "0." not in text.split("paths:")[0]

    # the documents it sent are remembered: a second expansion does not send them again
    sent = {d.doc_key for d in expansion.documents}
    again = sample_rt.expander.expand(result)
    assert not sent & {d.doc_key for d in again.documents}
    assert sent <= {k for (_, k) in sample_rt.memory.sent_documents("expand-1")}
    row, second = sample_rt.log.rows(session_id="expand-1", tool_name="graph_expand")
    assert row.retrieval_details["status"] == "expanded" and 0 < row.retrieval_details["lambda"] < 1
    assert set(row.retrieval_details["fused"]) == sent
    t = sample_rt.settings.thresholds(sample_rt.embedder.name)
    assert all(v >= t.reference_threshold for v in row.retrieval_details["semantic"].values())
    # the second expansion traversed from the same seeds: every traversal came from the cache
    seeds = len(second.retrieval_details["seeds"])
    assert second.retrieval_details["traversal_cache"] == {"hits": seeds, "misses": 0} and seeds > 0


def test_no_expansion_after_precise():
    from executor.core.results import LookupResult, LookupScores

    precise = LookupResult(
        found=True,
        relevance_level=Level.PRECISE,
        completeness_hint="",
        query="q",
        retrieved_domains_this_session=[],
        session="s",
        kb="sample",
        scores=LookupScores(relevant_docs=1),
    )
    assert not should_expand(precise, 5)
    thin = precise.model_copy(update={"relevance_level": Level.HIGHLY_RELEVANT})
    assert should_expand(thin, 5) and not should_expand(
        thin.model_copy(update={"scores": LookupScores(relevant_docs=6)}), 5
    )


def test_graph_down_during_a_lookup_degrades_to_lookup_results(sample_rt, tmp_path):
    rt = make_runtime(sample_rt.settings.home, falkordb_url=f"unix://{tmp_path}/nobody-listens.sock")
    try:
        result = rt.lookup_service.lookup("my service keeps restarting", "graph-down")
        assert result.documents  # the lookup itself is unaffected
        expansion = rt.expander.expand(result)
        assert expansion.status == "unavailable" and expansion.message.startswith("graph unavailable")
        assert expansion.documents == []
        row = rt.log.rows(session_id="graph-down", tool_name="graph_expand")[0]
        assert row.error.startswith("graph unavailable")
    finally:
        rt.close()


def test_llm_extraction_at_ingest_is_constrained_and_cached(tmp_path):
    from fake_openai import FakeOpenAI

    from executor.agent.llm import make_chat_model
    from executor.retrieval.llm_extraction import LLMExtractor

    kb_dir = write_kb(
        tmp_path / "kb",
        {
            "ops/a-queue.md": "# Queue workers\nThe billing worker reads jobs from the orders queue.",
            "ops/b-cache.md": "# Cache\nThe session cache sits in front of the user store.",
        },
    )
    config = {"entity_types": ["Software", "Concept"], "relation_types": ["DEPENDS_ON", "RELATED_TO"]}
    replies = [
        {
            "tool_calls": [
                (
                    "Extraction",
                    {
                        "entities": [
                            {"name": "billing worker", "type": "Software"},
                            {"name": "orders queue", "type": "Software"},
                            {"name": "Bob", "type": "Person"},
                        ],  # not a type this KB allows
                        "relations": [
                            {"source": "billing worker", "type": "DEPENDS_ON", "target": "orders queue", "weight": 0.8},
                            {"source": "billing worker", "type": "EMPLOYS", "target": "Bob", "weight": 0.9},
                        ],
                    },
                )
            ]
        },
        # the second document's call fails: the server has nothing scripted and answers 500
    ]
    home = tmp_path / "home"
    with FakeOpenAI(replies[:]) as server:
        rt = make_runtime(home, openai_base_url=server.base_url, openai_api_key="k", model="fake")
        model, _ = make_chat_model(rt.settings)
        extractor = LLMExtractor(model, "fake", config["entity_types"], config["relation_types"])
        try:
            report = ingest(rt, kb_dir, "llmkb", progress=False, extract_config=config, llm_extractor=extractor)
            assert any("ops/b-cache.md: LLM extraction failed" in w for w in report.warnings)
            paths = rt.graph.navigate("llmkb", "billing worker", 1)
            assert [p.summary() for p in paths] == ["billing worker -DEPENDS_ON-> orders queue"]
            assert rt.graph.entity("llmkb", "Bob") is None
            calls = len(server.requests)
            server.script.append({"tool_calls": [("Extraction", {"entities": [], "relations": []})]})
            ingest(rt, kb_dir, "llmkb", progress=False, llm_extractor=extractor)
            assert len(server.requests) == calls + 1  # only the document without a cached result was asked again
        finally:
            rt.close(stop_graph_server=True)


def test_expansion_ignores_query_names_the_graph_does_not_know(sample_rt):
    result = sample_rt.lookup_service.lookup("my FooBarService keeps restarting on port 9999", "expand-unknown")
    assert should_expand(result, 5)  # a thin or REFERENCE result: otherwise this test would check nothing
    expansion = sample_rt.expander.expand(result)
    assert expansion.status in ("expanded", "nothing_new")
    assert expansion.seeds and "FooBarService" not in expansion.seeds


def test_ingest_goes_on_without_the_graph_when_it_is_down(tmp_path):
    kb_dir = write_kb(tmp_path / "kb", {"ops/a.md": "# Alpha\nAlpha runs on Docker."})
    rt = make_runtime(tmp_path / "home", falkordb_url=f"unix://{tmp_path}/nobody.sock")
    try:
        report = ingest(rt, kb_dir, "nograph", progress=False, extract_config=SAMPLE_EXTRACT_CONFIG)
        assert report.graph is None and report.warnings[0].startswith("graph not built: graph unavailable")
        assert rt.lookup_service.lookup("Alpha Docker", "ng-1", kb="nograph").documents
    finally:
        rt.close()


def test_traversal_cache_hits_and_an_ingest_invalidates_it(tmp_path):
    """Seed 001 L3, on the SQL graph backend: a repeated traversal is served from the cache until the next ingest."""
    from executor.retrieval.traversal_cache import new_tally

    doc = "---\nrelations: [{{source: Alpha, type: DEPENDS_ON, target: {target}, weight: 0.8}}]\n---\n# Alpha\nAlpha."
    kb_dir = write_kb(tmp_path / "kb", {"ops/a.md": doc.format(target="Beta")})
    rt = make_runtime(tmp_path / "home", graph_backend="sql")
    try:
        ingest(rt, kb_dir, "small", progress=False, extract_config=SAMPLE_EXTRACT_CONFIG)
        tally = new_tally()
        first = rt.traversals.navigate("small", "Alpha", 2, None, 20, 25, tally)
        assert [p.summary() for p in first] == ["Alpha -DEPENDS_ON-> Beta"]
        assert rt.traversals.navigate("small", " alpha ", 2, None, 20, 25, tally) == first
        assert tally == {"hits": 1, "misses": 1}
        rt.traversals.navigate("small", "Alpha", 1, None, 20, 25, tally)  # other hops
        rt.traversals.navigate("small", "Alpha", 2, ["DEPENDS_ON"], 20, 25, tally)  # other relation filter
        rt.traversals.navigate("small", "Alpha", 2, ["depends_on"], 20, 25, tally)  # the same filter
        assert tally == {"hits": 2, "misses": 3}

        write_kb(kb_dir, {"ops/a.md": doc.format(target="Gamma")})
        ingest(rt, kb_dir, "small", progress=False)
        after = rt.traversals.navigate("small", "Alpha", 2, None, 20, 25, tally)
        assert [p.summary() for p in after] == ["Alpha -DEPENDS_ON-> Gamma"] and tally["misses"] == 4
    finally:
        rt.close()
