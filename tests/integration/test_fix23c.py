"""Hostile round 23 (issue 30), findings 1 and 2 and the settle observation: what a session remembers of a KB
lasts only as long as that KB's content, and a turn whose lookups found nothing looks the user's question up.

Real components: Milvus Lite and the USE embedder; the LLM is a scripted chat model (the bundled model's moves).
"""

import uuid

import pytest
from conftest import make_runtime, write_pages
from langgraph.checkpoint.memory import InMemorySaver
from scripted_model import ScriptedChatModel, lookup_call, tool_message

from executor.agent.session import run_turn
from executor.nodes.state import Context
from executor.retrieval.ingest import ingest
from executor.retrieval.knowledge_bases import drop_knowledge_base

pytestmark = pytest.mark.timeout(300)

PAGES = {
    "queue.md": "# Queue\n\nThe job queue uses Redis streams. Restart the consumer when it stalls.\n",
    "printer.md": "# Printer\n\nThe office printer is on floor 2; call facilities when it jams.\n",
}
CACHE_PAGE = "# Cache errors\n\nERR_CACHE_MISS means the cache key expired; the service reloads it from PostgreSQL.\n"
CACHE_QUESTION = "what does ERR_CACHE_MISS mean"


@pytest.fixture
def ops(tmp_path):
    """A runtime over a fresh home and the folder of KB `ops` (its two pages ingested)."""
    folder = write_pages(tmp_path / "docs", PAGES)
    rt = make_runtime(tmp_path / "home")
    ingest(rt, folder, "ops", progress=False)
    yield rt, folder
    rt.close()


def session() -> str:
    return f"f23c-{uuid.uuid4().hex[:8]}"


def test_a_miss_in_a_session_is_looked_up_again_once_an_ingest_adds_the_page(ops):
    """hostile23 #1: a session asked about ERR_CACHE_MISS when the KB had no page on it: nothing found. A teammate
    adds the page and ingests; the same question in that session (a chat left open, an MCP host's session) was
    DEDUPED `not_found_repeated` ("the knowledge base has nothing on this"), while a fresh session found the page."""
    rt, folder = ops
    sid = session()
    first = rt.lookup_service.lookup(CACHE_QUESTION, session_id=sid, kb="ops")
    assert not first.found and not first.documents, first.relevance_level
    write_pages(folder, {"cache.md": CACHE_PAGE})
    ingest(rt, folder, "ops", progress=False)
    again = rt.lookup_service.lookup(CACHE_QUESTION, session_id=sid, kb="ops")
    assert again.dedup_reason is None, (again.relevance_level, again.dedup_reason)
    assert [d.doc_key for d in again.documents][:1] == ["cache.md"], again.documents


def test_a_miss_still_blocks_its_repeat_after_an_ingest_that_adds_nothing(ops):
    """The repeat rule is kept where it is right: an ingest that changes no page leaves the KB as the miss found
    it, so the same question is still the repeated miss (nothing searched again, "the KB has nothing on this")."""
    rt, folder = ops
    sid = session()
    assert not rt.lookup_service.lookup(CACHE_QUESTION, session_id=sid, kb="ops").found
    ingest(rt, folder, "ops", progress=False)
    again = rt.lookup_service.lookup(CACHE_QUESTION, session_id=sid, kb="ops")
    assert again.dedup_reason == "not_found_repeated", (again.relevance_level, again.dedup_reason)


def test_a_session_asks_a_dropped_and_recreated_kb_afresh(ops, tmp_path):
    """hostile23 #2: a session was sent the ERR_CACHE_MISS page of `ops` ("45 s"); `kb drop ops`, then `ops`
    ingested again from a folder saying "99 s" (a KB rebuilt from scratch). The same lookup in that session was
    DEDUPED `query_repeated`, pointing at documents the drop removed, and `ask` answered "nothing". The page is
    sent again, in its new text."""
    rt, folder = ops
    write_pages(folder, {"cache.md": CACHE_PAGE.replace("expired", "expired after 45 s")})
    ingest(rt, folder, "ops", progress=False)
    sid = session()
    first = rt.lookup_service.lookup("ERR_CACHE_MISS", session_id=sid, kb="ops")
    assert "45 s" in "\n".join(d.content for d in first.documents), first.relevance_level
    drop_knowledge_base("ops", rt.catalog, rt.vectors, lambda: rt.graph)
    write_pages(folder, {"cache.md": CACHE_PAGE.replace("expired", "expired after 99 s")})
    ingest(rt, folder, "ops", progress=False)
    again = rt.lookup_service.lookup("ERR_CACHE_MISS", session_id=sid, kb="ops")
    assert again.dedup_reason is None, (again.relevance_level, again.dedup_reason)
    assert "99 s" in "\n".join(d.content for d in again.documents), again.documents


# the bundled SmolLM2-135M's move (hostile23, "not counted"): it looks up a tool's name, then proposes it again
INVENTED = "lookup_knowledge_graph"
QUESTION = "How does API rate limiting work here?"  # answered by api/rate-limiting.md in the sample KB


def turn(rt, model, question, **ctx):
    app = rt.app(model, "llm", checkpointer=InMemorySaver())
    return run_turn(app, question, session(), Context(max_rounds=4, **ctx), "llm")


def test_a_turn_whose_only_lookup_found_nothing_on_words_of_its_own_looks_the_question_up(sample_rt):
    """The model looked up a query of its own ("lookup_knowledge_graph": nothing found), then proposed it again;
    the turn answered from nothing, and the user's question was never looked up. Now the repeat is not run, the
    question is looked up once, and the answer cites the page on it."""
    invented = lookup_call(INVENTED)
    model = ScriptedChatModel(responses=[tool_message(invented), tool_message(invented)], answer="Per API key.")
    result = turn(sample_rt, model, QUESTION)
    assert [(t["tool"], t["query"], t["relevance_level"], t["dedup_reason"]) for t in result.trace] == [
        ("lookup_knowledge", INVENTED, "NONE", None),
        ("lookup_knowledge", INVENTED, None, "repeated_call"),
        ("lookup_knowledge", QUESTION, result.trace[2]["relevance_level"], None),
    ]
    assert result.trace[2]["sent"], result.trace[2]
    assert result.citations[0]["doc_key"] == "api/rate-limiting.md", result.citations


def test_a_question_looked_up_and_found_nothing_is_not_looked_up_again_by_settle(sample_rt):
    """The model looked the user's own question up, word for word, and the KB has nothing on it: settle does not
    run it a second time (it would find what it found); the turn answers."""
    question = "Who won the 1974 chess olympiad?"
    asked = lookup_call(question)
    model = ScriptedChatModel(responses=[tool_message(asked), tool_message(asked)], answer="Nothing on it.")
    result = turn(sample_rt, model, question)
    assert [(t["query"], t["relevance_level"], t["dedup_reason"]) for t in result.trace] == [
        (question, "NONE", None),
        (question, None, "repeated_call"),
    ]
    assert result.answer == "Nothing on it." and not result.citations


def test_the_question_lookup_of_settle_keeps_within_the_lookup_budget(sample_rt):
    """A budget of one lookup, spent on the model's invented query that found nothing: the turn ends there (the
    budget is the user's bound), and settle never adds a second lookup."""
    model = ScriptedChatModel(responses=[tool_message(lookup_call(INVENTED))], answer="Nothing on it.")
    result = turn(sample_rt, model, QUESTION, lookup_budget=1)
    assert [t["query"] for t in result.trace] == [INVENTED]
    assert not result.citations


def test_a_multi_kb_call_finds_the_page_another_kb_gained_despite_a_miss_of_the_other(tmp_path):
    """`query_knowledge_graph` over two KBs found nothing on ERR_CACHE_MISS; then one of them gained the page. The
    same call in that session was `not_found_repeated`: the miss remembered for the other KB, which still has
    nothing, blocked it. A call that finds something repeats no miss; with nothing found, the miss still holds."""
    queue = write_pages(tmp_path / "a", {"queue.md": PAGES["queue.md"]})
    printer = write_pages(tmp_path / "b", {"printer.md": PAGES["printer.md"]})
    rt = make_runtime(tmp_path / "home")
    try:
        ingest(rt, queue, "ka", progress=False)
        ingest(rt, printer, "kb2", progress=False)
        session = f"c23-{uuid.uuid4().hex[:8]}"
        first = rt.kg.query(["ka", "kb2"], CACHE_QUESTION, session)
        assert (first.dedup_reason, first.count) == (None, 0)
        again = rt.kg.query(["ka", "kb2"], CACHE_QUESTION, session)
        assert again.dedup_reason == "not_found_repeated"
        write_pages(queue, {"cache.md": CACHE_PAGE})
        ingest(rt, queue, "ka", progress=False)
        found = rt.kg.query(["ka", "kb2"], CACHE_QUESTION, session)
        assert found.dedup_reason is None
        assert [h.doc_key for h in found.results][:1] == ["cache.md"]
    finally:
        rt.close()
