"""Run eval scenarios through the real graph and stores, measure, and judge them.

`scripted` replays each scenario's proposals (only the LLM's choices are
scripted; rules, stores and answers are real; answers are extractive).
`llm` asks the configured model the same questions.
"""

from __future__ import annotations

import subprocess
import tempfile
import uuid
from collections import Counter
from pathlib import Path
from statistics import mean
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphRecursionError
from pydantic import BaseModel
from tqdm import tqdm

from evals.policy import ScriptedPolicy
from evals.scenarios_model import Expect, Scenario, Turn
from executor.agent.session import TurnResult, run_turn
from executor.core.errors import ExecutorError, InputError
from executor.core.relevance import Level
from executor.nodes.state import Context
from executor.prompts.executor import NOTHING_FOUND
from executor.tools.registry import LOOKUP, RETRIEVAL_TOOLS

MALFORMED = ("invalid_arguments", "unknown_tool")  # refused calls, not rule blocks


class ScenarioResult(BaseModel):
    id: str
    lang: str
    tags: list[str]
    guards: bool
    passed: bool
    failures: list[str]
    turns: int
    proposed_lookups: int
    executed_lookups: int
    executed_by_turn: list[int]
    blocked_by_reason: dict[str, int]
    # blocked lookups the scenario says must run, or the repeat labels call distinct, with the reason
    false_blocks: list[dict]
    # proposals the scenario marks as rephrasing an earlier question of the session (`rephrasings`), how many
    # of them ran a lookup, and the pages those sent
    rephrasings: int = 0
    rephrasing_lookups_run: int = 0
    rephrasing_pages_sent: list[str] = []
    duplicate_docs_sent: int
    same_domain_repeats: int
    precise_stop_ok: bool | None
    citation_recall: float | None
    tool_output_chars: int
    latency_ms: float
    rounds_by_turn: list[int]  # LLM rounds each turn took (the executor node's calls)
    retrievals_by_turn: list[int]  # lookup_knowledge and query_knowledge_graph calls that ran: what the budget counts
    lookup_budget: int
    within_budget: bool  # the bound the guards promise: no turn runs more retrievals than the budget
    citations: list[str]
    trace: list[dict]  # every turn's trace, each entry with its turn number


def _ran(entry: dict) -> bool:
    return not entry["blocked"] and not entry.get("error")


def _key(query) -> str:
    return " ".join(str(query or "").split()).casefold()


def distinct_pairs(labels) -> set[tuple[str, str]]:
    """(earlier, later) query pairs the repeat labels call distinct, normalised."""
    return {(_key(label.earlier), _key(label.later)) for label in labels or [] if label.label == "distinct"}


def _batches(turn: Turn, trace: list[dict], scripted: bool) -> list[int]:
    """The message each trace entry came in: the proposals' batches when replayed, else one per call."""
    return [b for b, _ in turn.flat_proposals] if scripted else list(range(len(trace)))


def precise_stop_ok(turn: Turn, trace: list[dict], scripted: bool) -> bool | None:
    """Nothing runs after a PRECISE result except calls planned in the same message."""
    batches = _batches(turn, trace, scripted)
    precise_at = next((i for i, t in enumerate(trace) if t.get("relevance_level") == Level.PRECISE), None)
    if precise_at is None:
        return None
    return not any(
        i > precise_at and t["tool"] == LOOKUP and _ran(t) and batches[i] != batches[precise_at]
        for i, t in enumerate(trace)
        if i < len(batches)
    )


def false_blocks(
    turn: Turn, trace: list[dict], earlier: list[str], distinct: set[tuple[str, str]], scripted: bool
) -> list[dict]:
    """Blocked lookups that should have run: listed in `must_allow`, or called distinct by the repeat labels
    from a lookup that ran before them in the session (an earlier turn or an earlier message)."""
    batches = _batches(turn, trace, scripted)
    out = []
    for i, t in enumerate(trace):
        if t["tool"] != LOOKUP or not t["blocked"] or t["dedup_reason"] in MALFORMED:
            continue
        before = earlier + [
            e["query"]
            for j, e in enumerate(trace[:i])
            if e["tool"] == LOOKUP and _ran(e) and j < len(batches) and i < len(batches) and batches[j] != batches[i]
        ]
        against = next((q for q in before if (_key(q), _key(t["query"])) in distinct), None)
        must_allow = scripted and i in turn.expect.must_allow
        if must_allow or against is not None:
            # doc_retrieved that held back new pages it found is the session-pages rule (issue 28) deciding that
            # the session's page answers: a false block like any other, not "every document was already sent"
            reason = (
                "answered_from_session"
                if t["dedup_reason"] == "doc_retrieved" and t.get("withheld")
                else t["dedup_reason"]
            )
            out.append({"query": t["query"], "reason": reason, "distinct_from": against, "must_allow": must_allow})
    return out


def is_false_block(f: dict) -> bool:
    """A blocked lookup the scenario says must run is a false block whatever blocked it (the turn fails on it);
    one only the repeat labels call distinct is not when every document it found had already been sent: the
    turn answers from them (`distinct_answered_from_sent_documents`)."""
    return f.get("must_allow", False) or f["reason"] != "doc_retrieved"


def rephrasing_runs(turn: Turn, trace: list[dict], scripted: bool) -> list[dict]:
    """The trace entries of the turn's rephrasings (proposal indexes, so only when the proposals were replayed)."""
    if not scripted:
        return []
    return [trace[i] for i in turn.expect.rephrasings if i < len(trace)]


def citation_groups(e: Expect) -> list[list[str]]:
    return [[p] for p in e.cite_all] + ([e.cite_any] if e.cite_any else [])


def measure(
    scenario: Scenario,
    turns: list[TurnResult],
    guards: bool,
    scripted: bool,
    distinct: set[tuple[str, str]] | None = None,
    budget: int = 3,
    retrieval: frozenset[str] = RETRIEVAL_TOOLS,
) -> ScenarioResult:
    """One scenario's figures over all its turns; each turn is judged against its own `expect`. `retrieval`: the
    tools whose calls the lookup budget counts."""
    failures, trace, fb, citations, precise, recalls = [], [], [], [], [], []
    earlier: list[str] = []
    rephrasings, rephrasings_run, rephrasing_pages = 0, 0, []
    for n, (turn, result) in enumerate(zip(scenario.turns, turns), start=1):
        executed = [t for t in result.trace if t["tool"] == LOOKUP and _ran(t)]
        cited = [c["doc_key"] for c in result.citations]
        prefix = f"turn {n}: " if len(scenario.turns) > 1 else ""
        failures += [prefix + f for f in judge(turn, result, executed, cited, scripted)]
        fb += [{**f, "turn": n} for f in false_blocks(turn, result.trace, earlier, distinct or set(), scripted)]
        ok = precise_stop_ok(turn, result.trace, scripted)
        if ok is not None:
            precise.append(ok)
        groups = citation_groups(turn.expect)
        if groups:
            recalls.append(sum(any(k.startswith(p) for k in cited for p in g) for g in groups) / len(groups))
        asked = rephrasing_runs(turn, result.trace, scripted)
        rephrasings += len(asked)
        rephrasings_run += sum(_ran(t) for t in asked)
        rephrasing_pages += [k for t in asked if _ran(t) for k in t.get("sent") or []]
        earlier += [t["query"] for t in executed]
        citations += [c for c in cited if c not in citations]
        trace += [{**t, "turn": n} for t in result.trace]

    lookups = [t for t in trace if t["tool"] == LOOKUP]
    executed = [t for t in lookups if _ran(t)]
    retrievals = [sum(1 for t in r.trace if t["tool"] in retrieval and _ran(t)) for r in turns]
    sent = Counter(k for t in trace for k in t.get("sent") or [])
    seen_domains, repeats = set(), 0
    for t in executed:
        repeats += t.get("domain") in seen_domains
        if t.get("domain"):
            seen_domains.add(t["domain"])
    return ScenarioResult(
        id=scenario.id,
        lang=scenario.lang,
        tags=scenario.tags,
        guards=guards,
        passed=not failures,
        failures=failures,
        turns=len(scenario.turns),
        proposed_lookups=len(lookups),
        executed_lookups=len(executed),
        executed_by_turn=[sum(1 for t in executed if t["turn"] == n) for n in range(1, len(scenario.turns) + 1)],
        blocked_by_reason=dict(Counter(t["dedup_reason"] for t in trace if t["blocked"])),
        false_blocks=fb,
        rephrasings=rephrasings,
        rephrasing_lookups_run=rephrasings_run,
        rephrasing_pages_sent=rephrasing_pages,
        duplicate_docs_sent=sum(n - 1 for n in sent.values() if n > 1),
        same_domain_repeats=repeats,
        precise_stop_ok=all(precise) if precise else None,
        citation_recall=round(sum(recalls) / len(recalls), 4) if recalls else None,
        tool_output_chars=sum(r.tool_output_chars for r in turns),
        latency_ms=round(sum(r.latency_ms for r in turns), 1),
        rounds_by_turn=[r.rounds for r in turns],
        retrievals_by_turn=retrievals,
        lookup_budget=budget,
        within_budget=all(n <= budget for n in retrievals),
        citations=citations,
        trace=trace,
    )


def judge(turn: Turn, result: TurnResult, executed: list[dict], cited: list[str], scripted: bool) -> list[str]:
    e, trace, out = turn.expect, result.trace, []
    for t in trace:  # a backend failure is never a pass, whatever the expectations say
        if t.get("error") and not t["blocked"]:
            out.append(f"{t['tool']}({t.get('query')!r}) failed: {t['error']}")
    n = len(executed)
    if e.max_executed_lookups is not None and n > e.max_executed_lookups:
        out.append(f"{n} lookups ran, at most {e.max_executed_lookups} expected")
    if e.min_executed_lookups is not None and n < e.min_executed_lookups:
        out.append(f"{n} lookups ran, at least {e.min_executed_lookups} expected")
    if e.first_level and (not trace or trace[0].get("relevance_level") not in e.first_level):
        out.append(
            f"first result {trace[0].get('relevance_level') if trace else None}, expected one of {e.first_level}"
        )
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
        about = e.cite_all + e.cite_any  # what the question is about: a rephrasing may send nothing else
        for t in rephrasing_runs(turn, trace, scripted):
            off = [k for k in t.get("sent") or [] if not any(k.startswith(p) for p in about)]
            if _ran(t) and off:
                out.append(f"rephrasing {t.get('query')!r} ran and sent pages not about the question: {', '.join(off)}")
    if e.no_answer:
        said = any(phrase in result.answer for phrase in NOTHING_FOUND.values())
        if result.citations or (scripted and not said):
            out.append("expected the answer to say the knowledge base has nothing on it")
    return out


def default_repeat_labels(repo_root) -> list:
    """Every repeat-pair label file of the repository (evals/labels/repeats*.yaml: the sample KB's, Helm's)."""
    from executor.retrieval.repeat_calibration import load_repeat_labels

    return [
        label
        for path in sorted((repo_root / "evals" / "labels").glob("repeats*.yaml"))
        for label in load_repeat_labels(path)
    ]


def prepare_knowledge_bases(
    rt, scenarios: list[Scenario], repo_root, progress: bool = False
) -> tuple[list[Scenario], list[str]]:
    """Every scenario's knowledge base, ingested from its `corpus` folder when the catalog lacks it. Returns the
    scenarios that can run and one line per scenario skipped because its corpus folder is missing."""
    from executor.retrieval.ingest import ingest

    kept, skipped, ingested = [], [], set()
    for s in scenarios:
        source = (repo_root / s.corpus).resolve() if s.corpus else None
        if rt.catalog.get(s.kb) is None and source is not None and s.kb not in ingested:
            with tempfile.TemporaryDirectory(prefix="executor-corpus-") as tmp:
                folder = built_corpus(source, Path(tmp)) if source.suffix == ".sh" else source
                if folder is None or not folder.is_dir():
                    skipped.append(f"{s.id}: no {s.corpus} here, skipped")
                    continue
                ingest(rt, folder, s.kb, progress=progress)
                ingested.add(s.kb)
        rt.catalog.require(s.kb)
        kept.append(s)
    return kept, skipped


def built_corpus(script: Path, out: Path) -> Path | None:
    """The folder a corpus script (`sh SCRIPT OUT_DIR`: documentation installed on the machine, copied out, so that
    its text stays out of the repository) builds; None when the script is missing or fails (the docs it copies are
    not installed here)."""
    if not script.is_file():
        return None
    done = subprocess.run(["sh", str(script), str(out / "docs")], capture_output=True, check=False)
    return out / "docs" if done.returncode == 0 else None


def run_suite(
    rt,
    scenarios: list[Scenario],
    guards: bool,
    policy: str = "scripted",
    model=None,
    progress: bool = True,
    repeat_labels=None,
    max_rounds: int | None = None,
    as_blocks: bool = False,
) -> list[ScenarioResult]:
    """Each scenario is one session: its turns run in order on one checkpointer and thread. `as_blocks`: the
    questions are sent as content blocks (the chat UI's message shape) instead of strings."""
    distinct = distinct_pairs(repeat_labels)
    retrieval = frozenset(name for name, tool in rt.tools.agent.items() if tool.retrieval)
    results = []
    for scenario in tqdm(scenarios, desc=f"eval guards {'on' if guards else 'off'}", disable=not progress, leave=False):
        saver, session = InMemorySaver(), f"eval-{scenario.id}-{uuid.uuid4().hex[:6]}"
        rounds: dict[str, Any] = {"max_rounds": max_rounds} if max_rounds else {}  # else the context's default
        context = Context(kb=scenario.kb, lookup_budget=rt.settings.lookup_budget, guards=guards, **rounds)
        turns = []
        for turn in scenario.turns:
            if policy == "scripted":
                chat, mode = ScriptedPolicy(batches=[[c.model_dump() for c in b] for b in turn.proposals]), "offline"
            else:
                chat, mode = model, "llm"
            app = rt.app(chat, mode, checkpointer=saver)
            try:
                turns.append(
                    run_turn(
                        app,
                        turn.question,
                        session,
                        context,
                        mode,
                        max_query_chars=rt.settings.max_query_chars,
                        as_blocks=as_blocks,
                    )
                )
            except GraphRecursionError:  # the rounds bound exists so that this never happens: say so, loudly
                raise ExecutorError(
                    f"{scenario.id} (guards {'on' if guards else 'off'}): a turn ended in a "
                    "recursion error instead of an answer"
                ) from None
        results.append(
            measure(scenario, turns, guards, policy == "scripted", distinct, context.lookup_budget, retrieval)
        )
    return results


def llm_policy_model(rt):
    """The chat model `--policy llm` asks: the runtime's (EXECUTOR_LOCAL_MODEL, served by a runtime built with
    `serve_model`, or the configured OpenAI-compatible endpoint)."""
    if not rt.settings.llm_configured:
        # asked wrongly (a setting is missing), not a failure: exit 2, as --help defines
        raise InputError("--policy llm needs EXECUTOR_LOCAL_MODEL, OPENAI_API_KEY or OPENAI_BASE_URL")
    return rt.chat_model[0]


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
        "storm_scenarios": len(storms),
        "false_blocks": sum(is_false_block(f) for r in results for f in r.false_blocks),
        # a later turn rephrasing an earlier question: how often it ran no lookup, and what the ones that ran sent
        "rephrasings": sum(r.rephrasings for r in results),
        "rephrasings_answered_from_session": (
            round(1 - sum(r.rephrasing_lookups_run for r in results) / sum(r.rephrasings for r in results), 3)
            if any(r.rephrasings for r in results)
            else None
        ),
        "rephrasing_lookups_run": sum(r.rephrasing_lookups_run for r in results),
        "rephrasing_pages_sent": sum(len(r.rephrasing_pages_sent) for r in results),
        "distinct_answered_from_sent_documents": sum(not is_false_block(f) for r in results for f in r.false_blocks),
        "multi_turn_scenarios": sum(r.turns > 1 for r in results),
        "min_executed_lookups_storms": min((r.executed_lookups for r in storms), default=None),
        "blocked_by_reason": dict(blocked),
        "duplicate_docs_sent": sum(r.duplicate_docs_sent for r in results),
        "same_domain_repeats": sum(r.same_domain_repeats for r in results),
        "precise_stop_compliance": round(sum(precise) / len(precise), 3) if precise else None,
        "citation_recall": round(mean(recalls), 3) if recalls else None,
        "mean_tool_output_chars": round(mean(r.tool_output_chars for r in results)),
        "mean_latency_ms": round(mean(r.latency_ms for r in results), 1),
        "mean_executed_retrievals": round(mean(sum(r.retrievals_by_turn) for r in results), 2),
        "max_executed_retrievals": max((n for r in results for n in r.retrievals_by_turn), default=None),
        "turns_over_budget": sum(n > r.lookup_budget for r in results for n in r.retrievals_by_turn),
        "mean_rounds": round(mean(n for r in results for n in r.rounds_by_turn), 2),
        "max_rounds": max((n for r in results for n in r.rounds_by_turn), default=None),
    }
