"""Issue 28, on the sample KB: a rephrasing sends none of the next-best pages, a lookup near an earlier one of the
session points back at what that one sent, and the eval report counts every blocked must-run lookup."""

import uuid

from evals.report import markdown
from evals.runner import aggregate, measure
from evals.scenarios_model import Scenario
from executor.agent.session import TurnResult


def session() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


def turn_result(query: str, blocked: bool) -> TurnResult:
    entry = {
        "tool": "lookup_knowledge",
        "query": query,
        "blocked": blocked,
        "error": None,
        "sent": [],
        "relevance_level": "DEDUPED" if blocked else "HIGHLY_RELEVANT",
        "withheld": [],
        "dedup_reason": "doc_retrieved" if blocked else None,
        "domain": "d",
    }
    return TurnResult(
        answer="",
        citations=[],
        trace=[entry],
        executed_lookups=0 if blocked else 1,
        blocked_lookups=int(blocked),
        proposed_lookups=1,
        graph_paths=[],
        session="s",
        mode="offline",
        latency_ms=1.0,
        tool_output_chars=0,
    )


def test_a_must_run_lookup_blocked_because_every_page_was_already_sent_is_a_false_block():
    scenario = Scenario.model_validate(
        {
            "id": "must-run",
            "lang": "en",
            "turns": [
                {"question": "q1", "proposals": [{"lookup_knowledge": {"query": "x"}}]},
                {
                    "question": "q2",
                    "proposals": [{"lookup_knowledge": {"query": "new"}}],
                    "expect": {"must_allow": [0]},
                },
            ],
        }
    )
    result = measure(scenario, [turn_result("x", False), turn_result("new", True)], True, True)
    assert not result.passed and [f["reason"] for f in result.false_blocks] == ["doc_retrieved"]
    agg = aggregate([result])
    assert (agg["false_blocks"], agg["distinct_answered_from_sent_documents"]) == (1, 0)
    # the report's row for the session says so too
    row = next(line for line in markdown([result], [result], "scripted").splitlines() if line.startswith("| must-run"))
    assert row.split(" | ")[6] == "1"
