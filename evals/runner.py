"""Run eval scenarios through the real graph and stores, measure, and judge them.

`scripted` replays each scenario's proposals (only the LLM's choices are
scripted; rules, stores and answers are real; answers are extractive).
`llm` asks the configured model the same questions.
"""

from __future__ import annotations

import uuid
from collections import Counter
from statistics import mean

from langgraph.checkpoint.memory import InMemorySaver
from pydantic import BaseModel
from tqdm import tqdm

from agent.graph import build_graph
from agent.session import TurnResult, run_turn
from agent.state import Context
from agent.tools import LOOKUP
from evals.policy import ScriptedPolicy
from evals.scenarios_model import Scenario
from prompts.executor import NOTHING_FOUND
from retrieval.relevance import Level


class ScenarioResult(BaseModel):
    id: str
    lang: str
    tags: list[str]
    guards: bool
    passed: bool
    failures: list[str]
    proposed_lookups: int
    executed_lookups: int
    blocked_by_reason: dict[str, int]
    duplicate_docs_sent: int
    same_domain_repeats: int
    precise_stop_ok: bool | None
    citation_recall: float | None
    tool_output_chars: int
    latency_ms: float
    citations: list[str]
    trace: list[dict]


def _ran(entry: dict) -> bool:
    return not entry["blocked"] and not entry.get("error")


def _batch_of(scenario: Scenario) -> list[int]:
    return [b for b, _ in scenario.flat_proposals]


def measure(scenario: Scenario, turn: TurnResult, guards: bool, scripted: bool) -> ScenarioResult:
    trace = turn.trace
    lookups = [t for t in trace if t["tool"] == LOOKUP]
    executed = [t for t in lookups if _ran(t)]
    blocked = Counter(t["dedup_reason"] for t in trace if t["blocked"])

    sent = Counter(k for t in trace for k in t.get("sent") or [])
    duplicates = sum(n - 1 for n in sent.values() if n > 1)

    seen_domains, repeats = set(), 0
    for t in executed:
        if t.get("domain") in seen_domains:
            repeats += 1
        if t.get("domain"):
            seen_domains.add(t["domain"])

    # PRECISE-stop: nothing runs after a PRECISE result except calls planned in the same message
    batches = _batch_of(scenario) if scripted else list(range(len(trace)))
    precise_at = next((i for i, t in enumerate(trace) if t.get("relevance_level") == Level.PRECISE), None)
    precise_ok = None
    if precise_at is not None:
        precise_ok = not any(
            i > precise_at and t["tool"] == LOOKUP and _ran(t) and batches[i] != batches[precise_at]
            for i, t in enumerate(trace) if i < len(batches)
        )

    cited = [c["doc_key"] for c in turn.citations]
    groups = [[p] for p in scenario.expect.cite_all] + ([scenario.expect.cite_any] if scenario.expect.cite_any else [])
    matched = sum(any(k.startswith(p) for k in cited for p in group) for group in groups)
    recall = matched / len(groups) if groups else None

    failures = judge(scenario, turn, executed, cited, scripted)
    return ScenarioResult(
        id=scenario.id, lang=scenario.lang, tags=scenario.tags, guards=guards, passed=not failures, failures=failures,
        proposed_lookups=len(lookups), executed_lookups=len(executed), blocked_by_reason=dict(blocked),
        duplicate_docs_sent=duplicates, same_domain_repeats=repeats, precise_stop_ok=precise_ok,
        citation_recall=recall, tool_output_chars=turn.tool_output_chars, latency_ms=turn.latency_ms,
        citations=cited, trace=trace,
    )


def judge(scenario: Scenario, turn: TurnResult, executed: list[dict], cited: list[str], scripted: bool) -> list[str]:
    e, trace, out = scenario.expect, turn.trace, []
    for t in trace:  # a backend failure is never a pass, whatever the expectations say
        if t.get("error") and not t["blocked"]:
            out.append(f"{t['tool']}({t.get('query')!r}) failed: {t['error']}")
    n = len(executed)
    if e.max_executed_lookups is not None and n > e.max_executed_lookups:
        out.append(f"{n} lookups ran, at most {e.max_executed_lookups} expected")
    if e.min_executed_lookups is not None and n < e.min_executed_lookups:
        out.append(f"{n} lookups ran, at least {e.min_executed_lookups} expected")
    if e.first_level and (not trace or trace[0].get("relevance_level") not in e.first_level):
        out.append(f"first result {trace[0].get('relevance_level') if trace else None}, expected one of {e.first_level}")
    for prefix in e.cite_all:
        if not any(k.startswith(prefix) for k in cited):
            out.append(f"nothing cited under {prefix}")
    if e.cite_any and not any(k.startswith(p) for k in cited for p in e.cite_any):
        out.append(f"none of {e.cite_any} cited")
    if scripted:  # proposal indexes mean something only when the proposals were replayed
        for i in e.must_block:
            if i < len(trace) and not trace[i]["blocked"]:
                out.append(f"proposal {i} ({trace[i].get('query')!r}) ran; it should have been blocked")
        for i in e.must_allow:
            if i >= len(trace):
                out.append(f"proposal {i} was never made: the turn ended before it")
            elif trace[i]["blocked"] or trace[i].get("error"):
                out.append(f"proposal {i} ({trace[i].get('query')!r}) was blocked ({trace[i]['dedup_reason']})")
    if e.no_answer:
        said = any(phrase in turn.answer for phrase in NOTHING_FOUND.values())
        if turn.citations or (scripted and not said):
            out.append("expected the answer to say the knowledge base has nothing on it")
    return out


def run_suite(rt, scenarios: list[Scenario], guards: bool, policy: str = "scripted", model=None,
              progress: bool = True) -> list[ScenarioResult]:
    results = []
    for scenario in tqdm(scenarios, desc=f"eval guards {'on' if guards else 'off'}", disable=not progress, leave=False):
        if policy == "scripted":
            chat, mode = ScriptedPolicy(batches=[[c.model_dump() for c in b] for b in scenario.proposals]), "offline"
        else:
            chat, mode = model, "llm"
        app = build_graph(rt, chat, mode, checkpointer=InMemorySaver())
        context = Context(kb=scenario.kb, lookup_budget=rt.settings.lookup_budget, guards=guards)
        session = f"eval-{scenario.id}-{uuid.uuid4().hex[:6]}"
        turn = run_turn(app, scenario.question, session, context, mode, max_query_chars=rt.settings.max_query_chars)
        results.append(measure(scenario, turn, guards, policy == "scripted"))
    return results


def aggregate(results: list[ScenarioResult]) -> dict:
    storms = [r for r in results if "storm" in r.tags]
    recalls = [r.citation_recall for r in results if r.citation_recall is not None]
    precise = [r.precise_stop_ok for r in results if r.precise_stop_ok is not None]
    blocked = Counter()
    for r in results:
        blocked.update(r.blocked_by_reason)
    return {
        "scenarios": len(results),
        "scenarios_passed": sum(r.passed for r in results),
        "scenarios_failed": sum(not r.passed for r in results),
        "mean_proposed_lookups": round(mean(r.proposed_lookups for r in results), 2),
        "mean_executed_lookups": round(mean(r.executed_lookups for r in results), 2),
        "mean_executed_lookups_storms": round(mean(r.executed_lookups for r in storms), 2) if storms else None,
        "min_executed_lookups_storms": min((r.executed_lookups for r in storms), default=None),
        "blocked_by_reason": dict(blocked),
        "duplicate_docs_sent": sum(r.duplicate_docs_sent for r in results),
        "same_domain_repeats": sum(r.same_domain_repeats for r in results),
        "precise_stop_compliance": round(sum(precise) / len(precise), 3) if precise else None,
        "citation_recall": round(mean(recalls), 3) if recalls else None,
        "mean_tool_output_chars": round(mean(r.tool_output_chars for r in results)),
        "mean_latency_ms": round(mean(r.latency_ms for r in results), 1),
    }
