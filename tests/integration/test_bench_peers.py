"""The peers benchmark on real runs: Executor, the prebuilt ReAct agent and the agentic-RAG graph over the sample
KB in Milvus Lite, with the scripted rephrasing policy."""

import json
import subprocess
import sys
from typing import Any

import pytest
import yaml
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from evals import REPO_ROOT, bench_peers
from evals.scenarios_model import load_scenarios

FIGURES = (
    "retrieval_calls_per_question",
    "citation_recall",
    "resent_documents",
    "retrieved_chars_per_question",
    "limit_endings",
    "turn_ms_p50",
    "llm_calls_per_question",
    "resent_chunks",
    "retrieved_chars_in_llm_inputs_per_question",
    "turn_ms_p95",
)


@pytest.fixture(scope="module")
def scenarios():
    return {s.id: s for s in load_scenarios([REPO_ROOT / "evals" / "scenarios"])}


def test_a_follow_up_on_a_retrieved_document_is_resent_by_react_not_by_executor(sample_rt, scenarios):
    # turn 2 asks about cache avalanches, which the Redis page retrieved in turn 1 already covers
    report = bench_peers.run(sample_rt, [scenarios["mt-two-parts-one-domain-zh"]], "scripted", None, rounds=12, k=4)
    agents = report["agents"]
    assert set(agents) == {"executor", "react", "agentic_rag"}
    for figures in agents.values():
        assert set(FIGURES) <= set(figures)
        assert figures["questions"] == 2
    row = report["per_scenario"][0]
    # the second turn's lookup searches, finds the page turn 1 sent, and sends only its name
    assert row["executor"]["retrieval_calls"] == [2, 1]
    assert agents["executor"]["deduplicated_calls"] >= 1
    assert row["react"]["retrieval_calls"] == [2, 1]
    assert agents["executor"]["resent_documents"] == 0 and agents["executor"]["resent_chunks"] == 0
    assert agents["react"]["resent_documents"] >= 1 and agents["react"]["resent_chunks"] >= 1
    assert report["comparison"]["react"]["baseline_resent_documents"] == agents["react"]["resent_documents"]
    for name in agents:  # the expected pages were found by every agent
        assert agents[name]["citation_recall"] == 1.0
    # turn 2: ReAct's call sent the chunks again, Executor's result names the page without its text
    assert row["react"]["retrieved_chars"][1] > row["executor"]["retrieved_chars"][1]


def test_a_rephrasing_storm_runs_react_to_its_step_limit(sample_rt, scenarios):
    report = bench_peers.run(sample_rt, [scenarios["storm-rate-limit-en"]], "scripted", None, rounds=12, k=4)
    react, executor, rag = (report["agents"][n] for n in ("react", "executor", "agentic_rag"))
    # 25 supersteps (LangGraph's default): 12 tool rounds, then "need more steps" instead of an answer
    assert react["retrieval_calls_per_question"]["max"] == 12
    assert react["limit_endings"] == 1
    assert react["resent_documents"] > 0
    assert executor["retrieval_calls_per_question"]["max"] <= sample_rt.settings.lookup_budget
    assert executor["limit_endings"] == 0 and executor["resent_documents"] == 0
    # the tutorial graph with a perfect grader: one retrieval, then the grader's and the answer's LLM calls
    assert rag["retrieval_calls_per_question"]["max"] == 1
    assert rag["llm_calls_per_question"]["max"] == 3
    c = report["comparison"]["react"]
    assert c["retrieval_calls_ratio"] >= 3 and c["targets"]["retrieval_calls_3x_fewer"]
    assert react["retrieved_chars_per_question"]["mean"] > executor["retrieved_chars_per_question"]["mean"]


class Rephraser(BaseChatModel):
    """A model that never stops looking: bound with tools it calls the first one with one more rephrasing of
    the pool question (a grade it is asked for is always "no"); unbound it answers."""

    tools: list[str] = []

    @property
    def _llm_type(self) -> str:
        return "test-rephraser"

    def bind_tools(self, tools, **kwargs):
        names = [
            t.name if hasattr(t, "name") else getattr(t, "__name__", t.get("name") if isinstance(t, dict) else "")
            for t in tools
        ]
        return self.model_copy(update={"tools": names})

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        if not self.tools:
            return ChatResult(generations=[ChatGeneration(message=AIMessage("The pool is configured in the service."))])
        tool = self.tools[0]
        args = {"binary_score": "no"} if tool == "Grade" else {"query": f"数据库连接池配置 第 {len(messages)} 种说法"}
        call = {"name": tool, "args": args, "id": f"call_{len(messages)}_{tool}", "type": "tool_call"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])


def test_with_a_model_that_never_stops_the_peers_run_to_their_limits_and_executor_to_its_budget(sample_rt, scenarios):
    report = bench_peers.run(sample_rt, [scenarios["seed1-pool-config"]], "llm", Rephraser(), rounds=6, k=4)
    executor, react, rag = (report["agents"][n] for n in ("executor", "react", "agentic_rag"))
    assert react["retrieval_calls_per_question"]["max"] == 6 and react["limit_endings"] == 1
    assert rag["limit_endings"] == 1  # the grader never says relevant: rewrite, retrieve, until the recursion limit
    assert rag["retrieval_calls_per_question"]["max"] >= 5
    assert executor["retrieval_calls_per_question"]["max"] <= sample_rt.settings.lookup_budget
    assert executor["limit_endings"] == 0 and executor["resent_documents"] == 0
    assert react["resent_documents"] > 0 and rag["resent_documents"] > 0
    # every grade and rewrite is an LLM call of its own
    assert rag["llm_calls_per_question"]["max"] > react["llm_calls_per_question"]["max"]
    calls = report["per_scenario"][0]["react"]["calls"][0]
    assert len(calls) == 6 and all(c.startswith("search_knowledge_base: 数据库连接池配置") for c in calls)


class Lister(BaseChatModel):
    """What SmolLM2-135M does with Executor's tools: list the knowledge bases, every round; with the peers' one
    tool it searches the question once, then answers (a grade it is asked for is "yes")."""

    tools: list[str] = []

    @property
    def _llm_type(self) -> str:
        return "test-lister"

    def bind_tools(self, tools, **kwargs):
        return Rephraser.bind_tools(self, tools)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        searched = any(getattr(m, "type", "") == "tool" for m in messages)
        if not self.tools or (searched and "list_knowledge_bases" not in self.tools and self.tools[0] != "Grade"):
            return ChatResult(generations=[ChatGeneration(message=AIMessage("Connections come from a pool."))])
        tool = "list_knowledge_bases" if "list_knowledge_bases" in self.tools else self.tools[0]
        args = (
            {"binary_score": "yes"}
            if tool == "Grade"
            else {}
            if tool == "list_knowledge_bases"
            else {"query": str(messages[-1].content)}
        )
        call = {"name": tool, "args": args, "id": f"call_{len(messages)}_{tool}", "type": "tool_call"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])


def test_a_model_that_only_lists_knowledge_bases_gets_an_answer_from_executor_not_a_limit(sample_rt, scenarios):
    report = bench_peers.run(sample_rt, [scenarios["seed1-pool-config"]], "llm", Lister(), rounds=4, k=4)
    executor = report["agents"]["executor"]
    # the listing repeated is not run: the graph looks the question up itself and answers from it
    assert executor["limit_endings"] == 0 and executor["settled_turns"] == 1
    assert executor["retrieval_calls_per_question"]["max"] == 1 and executor["citation_recall"] == 1.0
    assert executor["llm_calls_per_question"]["max"] == 3  # two rounds and the answer
    assert report["agents"]["react"]["citation_recall"] <= executor["citation_recall"]


def test_the_command_writes_the_report_and_the_plot(tmp_path):
    path = tmp_path / "one.yaml"
    path.write_text(
        yaml.safe_dump(
            [
                {
                    "id": "miss-then-storm",
                    "lang": "en",
                    "turns": [
                        {
                            "question": "How many vacation days do new employees get?",
                            "proposals": [{"lookup_knowledge": {"query": "vacation days new employees"}}],
                        },
                        {
                            "question": "What about the holiday allowance then?",
                            "proposals": [
                                {"lookup_knowledge": {"query": q}}
                                for q in ("holiday allowance", "annual leave", "vacation days")
                            ],
                        },
                    ],
                }
            ]
        ),
        encoding="utf-8",
    )
    out, png = tmp_path / "peers.json", tmp_path / "peers.png"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "evals.bench_peers",
            "--scenarios",
            str(path),
            "--json",
            str(out),
            "--plot",
            str(png),
            "--home",
            str(tmp_path / "home"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["policy"] == "scripted" and report["scenarios"] == 1
    assert set(report["agents"]) == {"executor", "react", "agentic_rag"}
    # the vacation question has no answer in the KB: the rephrasings of turn 2 re-send what turn 1 found
    assert report["agents"]["executor"]["resent_documents"] == 0
    assert report["agents"]["react"]["retrieval_calls_per_question"]["max"] == 3
    assert png.stat().st_size > 10_000
    assert "Executor" in r.stdout and "ReAct" in r.stdout


def test_a_missing_scenario_file_is_one_line_and_exit_2(tmp_path):
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "evals.bench_peers",
            "--scenarios",
            str(tmp_path / "none.yaml"),
            "--home",
            str(tmp_path / "home"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=120,
    )
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [f"error: {tmp_path / 'none.yaml'}: no such file or folder"]
