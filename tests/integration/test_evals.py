"""The ISS-002 eval suite: scenario parsing, and the scripted suite against its targets on the real stores."""

import pytest
from conftest import run_cli

from evals import REPO_ROOT
from evals.report import markdown
from evals.runner import aggregate, default_repeat_labels, prepare_knowledge_bases, run_suite
from evals.scenarios_model import Scenario, load_scenarios
from executor.core.errors import InputError

SUITE = REPO_ROOT / "evals" / "scenarios"


def test_the_shipped_suite_has_the_promised_shape():
    scenarios = load_scenarios([SUITE])
    assert len(scenarios) >= 30
    assert {s.lang for s in scenarios} == {"zh", "en"}
    tags = {t for s in scenarios for t in s.tags}
    assert {"seed", "storm", "multi-domain", "reference", "no-answer"} <= tags
    storms = [s for s in scenarios if "storm" in s.tags and len(s.turns) == 1]
    assert all(len(s.flat_proposals) == 20 for s in storms) and len(storms) >= 5
    assert sum("seed" in s.tags for s in scenarios) >= 4
    multi = [s for s in scenarios if len(s.turns) > 1]
    assert len(multi) >= 15 and {"distinct", "rephrase", "storm", "no-answer", "two-parts", "three-turns"} <= {
        t for s in multi for t in s.tags
    }
    assert any(t.expect.max_executed_lookups == 0 for s in multi for t in s.turns)


@pytest.mark.parametrize(
    "text, message",
    [
        ("id: x\nlang: zh\nquestion: q\nproposals:\n  - drop_tables: {}\n", "unknown tool 'drop_tables'"),
        ("id: x\nlang: fr\nquestion: q\n", "lang"),
        ("id: x\nlang: zh\nquestion: q\nexpect: {max_lookups: 1}\n", "max_lookups"),
        ("id: x\nlang: zh\nquestion: [unclosed\n", "not valid YAML"),
        ("- {id: x, lang: zh, question: q}\n- {id: x, lang: en, question: r}\n", "used twice"),
        ("id: x\nlang: zh\nquestion: q\nturns:\n  - {question: r}\n", "either turns or question"),
        ("id: x\nlang: zh\nturns: []\n", "turns"),
        ("id: x\nlang: zh\nturns:\n  - {proposals: []}\n", "turns.0.question"),
        ("id: x\nlang: zh\nturns:\n  - {question: q, expect: {max_lookups: 0}}\n", "max_lookups"),
        ("id: x\nlang: zh\nturns:\n  - question: q\n    proposals:\n      - drop_tables: {}\n", "unknown tool"),
    ],
)
def test_bad_scenarios_are_one_line_errors(tmp_path, text, message):
    (tmp_path / "bad.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message) as err:
        load_scenarios([tmp_path])
    assert "\n" not in str(err.value)


def test_turns_and_the_one_turn_form_mean_the_same():
    one = Scenario.model_validate(
        {
            "id": "a",
            "lang": "en",
            "question": "q",
            "proposals": [{"lookup_knowledge": {"query": "x"}}],
            "expect": {"max_executed_lookups": 1},
        }
    )
    turns = Scenario.model_validate(
        {
            "id": "a",
            "lang": "en",
            "turns": [
                {
                    "question": "q",
                    "proposals": [{"lookup_knowledge": {"query": "x"}}],
                    "expect": {"max_executed_lookups": 1},
                }
            ],
        }
    )
    assert one.turns == turns.turns and one.question == "q"


def test_each_turn_is_judged_by_its_own_expect():
    """`max_executed_lookups: 0`: the turn must be answered from what the session has; a lookup that ran fails it."""
    from evals.runner import measure
    from executor.agent.session import TurnResult

    scenario = Scenario.model_validate(
        {
            "id": "b",
            "lang": "en",
            "turns": [
                {
                    "question": "q1",
                    "proposals": [{"lookup_knowledge": {"query": "x"}}],
                    "expect": {"min_executed_lookups": 1},
                },
                {
                    "question": "q2",
                    "proposals": [{"lookup_knowledge": {"query": "y"}}],
                    "expect": {"max_executed_lookups": 0, "cite_any": ["a.md"]},
                },
            ],
        }
    )

    def result(query, blocked, cited):
        entry = {
            "tool": "lookup_knowledge",
            "query": query,
            "blocked": blocked,
            "error": None,
            "sent": [],
            "relevance_level": "DEDUPED" if blocked else "HIGHLY_RELEVANT",
            "dedup_reason": "query_repeated" if blocked else None,
            "domain": "d",
        }
        return TurnResult(
            answer="",
            citations=[{"doc_key": k} for k in cited],
            trace=[entry],
            executed_lookups=0,
            blocked_lookups=0,
            proposed_lookups=1,
            graph_paths=[],
            session="s",
            mode="offline",
            latency_ms=1.0,
            tool_output_chars=0,
        )

    good = measure(scenario, [result("x", False, ["a.md"]), result("y", True, ["a.md"])], True, True)
    assert good.passed and good.executed_by_turn == [1, 0] and good.false_blocks == []
    ran = measure(scenario, [result("x", False, ["a.md"]), result("y", False, [])], True, True)
    assert ran.failures == ["turn 2: 1 lookups ran, at most 0 expected", "turn 2: none of ['a.md'] cited"]
    # a blocked lookup the labels call distinct from one that ran before it is a false block
    blocked = measure(
        scenario, [result("x", False, ["a.md"]), result("y", True, ["a.md"])], True, True, distinct={("x", "y")}
    )
    assert blocked.false_blocks == [
        {"query": "y", "reason": "query_repeated", "distinct_from": "x", "must_allow": False, "turn": 2}
    ]


def test_rephrasings_are_counted_per_session_and_one_that_sends_an_unrelated_page_fails():
    from evals.runner import measure
    from executor.agent.session import TurnResult

    scenario = Scenario.model_validate(
        {
            "id": "r",
            "lang": "en",
            "turns": [
                {
                    "question": "q1",
                    "proposals": [{"lookup_knowledge": {"query": "x"}}],
                    "expect": {"cite_any": ["a.md"]},
                },
                {
                    "question": "q2",
                    "proposals": [{"lookup_knowledge": {"query": "x again"}}],
                    "expect": {"rephrasings": [0], "cite_any": ["a.md"]},
                },
            ],
        }
    )

    def result(query, blocked, sent):
        entry = {
            "tool": "lookup_knowledge",
            "query": query,
            "blocked": blocked,
            "error": None,
            "sent": sent,
            "relevance_level": "DEDUPED" if blocked else "HIGHLY_RELEVANT",
            "dedup_reason": "doc_retrieved" if blocked else None,
            "domain": "d",
        }
        return TurnResult(
            answer="",
            citations=[{"doc_key": "a.md"}],
            trace=[entry],
            executed_lookups=0,
            blocked_lookups=0,
            proposed_lookups=1,
            graph_paths=[],
            session="s",
            mode="offline",
            latency_ms=1.0,
            tool_output_chars=0,
        )

    held = measure(scenario, [result("x", False, ["a.md"]), result("x again", True, [])], True, True)
    assert held.passed and (held.rephrasings, held.rephrasing_lookups_run, held.rephrasing_pages_sent) == (1, 0, [])
    ran = measure(scenario, [result("x", False, ["a.md"]), result("x again", False, ["other.md"])], True, True)
    assert (ran.rephrasings, ran.rephrasing_lookups_run, ran.rephrasing_pages_sent) == (1, 1, ["other.md"])
    assert ran.failures == ["turn 2: rephrasing 'x again' ran and sent pages not about the question: other.md"]
    agg = aggregate([held, ran])
    assert agg["rephrasings_answered_from_session"] == 0.5 and agg["rephrasing_pages_sent"] == 1


def test_a_must_allow_lookup_answered_from_the_session_while_new_pages_were_found_is_a_false_block():
    """doc_retrieved that withheld new pages it found is the session-pages rule blocking a new question: a false block
    under its own reason (`answered_from_session`), told apart from "every document had already been sent"."""
    from evals.runner import measure
    from executor.agent.session import TurnResult

    scenario = Scenario.model_validate(
        {
            "id": "n",
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

    def result(query, blocked, withheld):
        entry = {
            "tool": "lookup_knowledge",
            "query": query,
            "blocked": blocked,
            "error": None,
            "sent": [],
            "relevance_level": "DEDUPED" if blocked else "HIGHLY_RELEVANT",
            "withheld": withheld,
            "dedup_reason": "doc_retrieved" if blocked else None,
            "domain": "d",
        }
        return TurnResult(
            answer="",
            citations=[],
            trace=[entry],
            executed_lookups=0,
            blocked_lookups=0,
            proposed_lookups=1,
            graph_paths=[],
            session="s",
            mode="offline",
            latency_ms=1.0,
            tool_output_chars=0,
        )

    all_sent = measure(scenario, [result("x", False, []), result("new", True, [])], True, True)
    withheld = measure(scenario, [result("x", False, []), result("new", True, ["b.md"])], True, True)
    assert [f["reason"] for f in all_sent.false_blocks] == ["doc_retrieved"]
    assert [f["reason"] for f in withheld.false_blocks] == ["answered_from_session"]
    agg = aggregate([all_sent, withheld])
    # a lookup the scenario says must run is a false block whatever blocked it
    assert (agg["false_blocks"], agg["distinct_answered_from_sent_documents"]) == (2, 0)
    # the report's row for the session says so too
    row = next(line for line in markdown([all_sent], [all_sent], "scripted").splitlines() if line.startswith("| n "))
    assert row.split(" | ")[6] == "1"


def test_a_scenario_whose_corpus_is_missing_is_skipped_and_one_whose_kb_is_missing_fails(sample_rt, tmp_path):
    here = Scenario.model_validate({"id": "here", "lang": "en", "question": "q"})
    away = Scenario.model_validate(
        {"id": "away", "lang": "en", "kb": "nowhere", "corpus": "no/such/folder", "question": "q"}
    )
    kept, skipped = prepare_knowledge_bases(sample_rt, [here, away], tmp_path)
    assert [s.id for s in kept] == ["here"] and skipped == ["away: no no/such/folder here, skipped"]
    lost = Scenario.model_validate({"id": "lost", "lang": "en", "kb": "nowhere", "question": "q"})
    with pytest.raises(InputError, match="nowhere"):
        prepare_knowledge_bases(sample_rt, [lost], tmp_path)
    # a corpus that is there is ingested once, under the scenario's KB name
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "runbook.md").write_text("# Restarting the queue\nRun `queuectl restart`.\n", encoding="utf-8")
    found = [
        Scenario.model_validate({"id": f"c{i}", "lang": "en", "kb": "fromcorpus", "corpus": "docs", "question": "q"})
        for i in range(2)
    ]
    kept, skipped = prepare_knowledge_bases(sample_rt, found, tmp_path)
    assert len(kept) == 2 and not skipped and list(sample_rt.catalog.documents("fromcorpus")) == ["runbook.md"]


def test_a_corpus_named_by_a_script_is_built_then_ingested_and_skipped_where_the_script_fails(sample_rt, tmp_path):
    # the script copies documentation installed on the machine, so that its text stays out of the repository
    (tmp_path / "build.sh").write_text(
        'set -eu\nmkdir -p "$1"\nprintf "# Rotating keys\\nRun keyctl rotate.\\n" > "$1/keys.md"\n', encoding="utf-8"
    )
    (tmp_path / "broken.sh").write_text("exit 3\n", encoding="utf-8")
    built = Scenario.model_validate({"id": "b", "lang": "en", "kb": "built", "corpus": "build.sh", "question": "q"})
    broken = Scenario.model_validate({"id": "x", "lang": "en", "kb": "nodocs", "corpus": "broken.sh", "question": "q"})
    kept, skipped = prepare_knowledge_bases(sample_rt, [built, broken], tmp_path)
    assert [s.id for s in kept] == ["b"] and skipped == ["x: no broken.sh here, skipped"]
    assert list(sample_rt.catalog.documents("built")) == ["keys.md"]
    assert sample_rt.catalog.get("nodocs") is None


def test_scripted_suite_meets_its_targets(sample_rt):
    # a scenario on a corpus outside the repository runs where it is, and is skipped elsewhere (the Helm
    # sessions are held-out measures in evals/review/, not part of the gated suite)
    scenarios, skipped = prepare_knowledge_bases(sample_rt, load_scenarios([SUITE]), REPO_ROOT)
    assert len(scenarios) + len(skipped) >= 59 and all("skipped" in line for line in skipped)
    labels = default_repeat_labels(REPO_ROOT)
    on = run_suite(sample_rt, scenarios, guards=True, progress=False, repeat_labels=labels)
    off = run_suite(sample_rt, scenarios, guards=False, progress=False, repeat_labels=labels)
    agg_on, agg_off = aggregate(on), aggregate(off)
    failed = {r.id: r.failures for r in on if not r.passed}
    assert not failed
    assert agg_on["false_blocks"] == 0
    assert agg_on["mean_executed_lookups_storms"] <= 1.5 and agg_on["multi_turn_scenarios"] >= 15
    assert agg_on["mean_executed_lookups"] <= 2
    assert agg_on["duplicate_docs_sent"] == 0
    assert agg_on["citation_recall"] >= 0.95
    assert agg_on["precise_stop_compliance"] == 1.0
    # a later turn that rephrases an earlier question runs no lookup in 90% of cases or more (issue 28), and
    # no rephrasing that ran sent a page the question is not about (each scenario fails on that)
    assert agg_on["rephrasings"] >= 20 and agg_on["rephrasings_answered_from_session"] >= 0.9
    # the baseline is the same graph without the rules: the storms loop as in ISS-002
    storms_off = {r.id: r.executed_lookups for r in off if "storm" in r.tags}
    storms_on = {r.id: r.executed_lookups for r in on if "storm" in r.tags}
    assert all(n >= 10 for i, n in storms_off.items() if not i.startswith("mt-"))
    assert all(storms_off[i] > storms_on[i] for i in storms_off if i.startswith("mt-"))
    assert agg_off["duplicate_docs_sent"] > 0 and agg_off["scenarios_failed"] > 0


def test_llm_policy_asks_the_model_the_same_questions(sample_rt):
    """--policy llm: the configured model decides; proposal indexes are not judged, everything else is."""
    from langchain_core.messages import AIMessage
    from scripted_model import ScriptedChatModel, lookup_call, tool_message

    from evals.scenarios_model import Scenario

    scenario = Scenario.model_validate(
        {
            "id": "llm-err-timeout",
            "lang": "en",
            "question": "What does ERR_TIMEOUT mean?",
            "proposals": [{"lookup_knowledge": {"query": "never replayed"}}],
            "expect": {"max_executed_lookups": 1, "cite_any": ["troubleshooting/err-timeout.md"], "must_allow": [5]},
        }
    )
    model = ScriptedChatModel(
        responses=[tool_message(lookup_call("ERR_TIMEOUT")), AIMessage("unused")],
        answer="It means the request timed out. [troubleshooting/err-timeout.md]",
    )
    [result] = run_suite(sample_rt, [scenario], guards=True, policy="llm", model=model, progress=False)
    assert result.passed, result.failures
    assert [t["query"] for t in result.trace] == ["ERR_TIMEOUT"]
    assert result.citations == ["troubleshooting/err-timeout.md"]


def test_eval_fails_at_once_when_its_report_cannot_be_written(tmp_path):
    """The suite runs for minutes; a report path under a file fails before it starts, in one line."""
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    r = run_cli(tmp_path / "home", "eval", "--report-json", str(blocker / "eval.json"))
    assert r.returncode == 1
    assert "cannot write" in r.stderr and r.stderr.strip().count("\n") == 0
