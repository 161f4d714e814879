"""Round eighteen of the hostile pass (issue 30): what it found of severity 6 or worse, each case as it fails today.

Every test is marked `xfail(strict=True)` with its finding's number in evals/review/hostile18-findings.md: it fails
on today's code (so the file passes), and whoever mends the finding flips the marker (a strict xfail that passes
fails the suite, which says so). Real components throughout: the sample KB in Milvus Lite with the USE embedder
(`sample_rt`), the graph in process over a real SQLite checkpointer (as `langgraph dev` runs it: the probe saw each
case through the server and `langgraph_sdk` too), and `llm serve`'s own request parsing.
"""

import json
import uuid

import pytest
from conftest import FIRST_Q, NEXT_Q, asked, run_cli
from langchain_core.messages import HumanMessage
from langgraph.types import Command

from executor.core.errors import InputError
from executor.local_llm.protocol import RequestError, parse_request
from executor.nodes.state import Context

pytestmark = pytest.mark.timeout(300)

HIKARI = "infrastructure/hikaricp-parameters.md"


def lookup(rt, query: str, kb: str = "sample"):
    return rt.lookup_service.lookup(query, session_id=f"h18-{uuid.uuid4().hex[:10]}", kb=kb)


def sent(result) -> list[str]:
    return [d.doc_key for d in (*result.primary, *result.supplement)]


# -- finding 1: a question of several words around one page's own keyword --------------------------------------
@pytest.mark.parametrize(
    "query",
    [
        "what does leakDetectionThreshold do in Spring Boot",  # was REFERENCE on kubernetes-rolling-update.md
        "how do I set leakDetectionThreshold for our service",  # was nothing found
    ],
)
def test_a_question_around_a_pages_own_keyword_finds_that_page(sample_rt, query):
    # `leakDetectionThreshold` is a front-matter keyword of the HikariCP page alone; `what does
    # leakDetectionThreshold do` finds it (REFERENCE), a few words more lose it
    result = lookup(sample_rt, query)
    assert result.relevance_level is not None, result.details.get("top_score")
    assert sent(result)[0] == HIKARI, sent(result)


# -- finding 2: a camel-case key typed in snake or kebab case, or as its words ------------------------------------
@pytest.mark.parametrize("query", ["maximum_pool_size", "leak-detection-threshold", "leak detection threshold"])
def test_a_config_key_typed_in_another_style_finds_its_page(sample_rt, query):
    # the KB writes maximumPoolSize and leakDetectionThreshold; `maximumpoolsize` and `LEAKDETECTIONTHRESHOLD` find
    # their pages (as_searched), `maximum_pool_size` (top score 0.40) is capped to nothing as an unknown name
    result = lookup(sample_rt, query)
    assert result.relevance_level is not None, (result.details.get("top_score"), result.details.get("unknown_names"))
    assert {HIKARI, "infrastructure/mysql-connection-pool.md"} & set(sent(result)), sent(result)


# -- finding 3: a command the pages use, asked alone -----------------------------------------------------------
@pytest.mark.parametrize("query", ["kubectl", "KUBECTL"])
def test_a_command_the_pages_use_asked_alone_is_found(sample_rt, query):
    # five pages write kubectl (the rolling-update page three times, the rollback page's keyword
    # `kubectl rollout undo`); `kubectl rollout` finds the rolling-update page
    result = lookup(sample_rt, query)
    assert result.relevance_level is not None, result.details.get("top_score")
    assert {"deployment/kubernetes-rolling-update.md", "deployment/rollback.md"} & set(sent(result)), sent(result)


# -- findings 4 and 5: a refused run on a thread, from a fork or as a Command -------------------------------------
# `thread` (conftest): FIRST_Q and NEXT_Q asked and answered over a real SQLite checkpointer


@pytest.mark.parametrize("question", ["bad\x07", "y" * 2500], ids=["control", "too-long"])
def test_a_refused_run_from_an_earlier_checkpoint_leaves_the_thread_as_it_was(thread, question):
    app, config = thread
    before = app.get_state(config).values
    [first_turn] = [
        s.config
        for s in app.get_state_history(config)
        if not s.next and asked(s.values) == [FIRST_Q]  # the end of the first turn
    ]
    with pytest.raises(InputError):
        app.invoke({"messages": [HumanMessage(question)]}, first_turn, context=Context())
    # the thread's head was the fork point: NEXT_Q and its answer were gone from the thread's state
    assert asked(app.get_state(config).values) == [FIRST_Q, NEXT_Q]
    assert app.get_state(config).values == before


@pytest.mark.parametrize("question", ["bad\x07", "y" * 2500], ids=["control", "too-long"])
def test_a_question_sent_as_a_command_is_checked_as_a_runs_input(thread, question):
    # langgraph_sdk: runs.wait(thread, "executor", command={"update": {...}, "goto": "begin_turn"}); today the turn
    # answers it ("The knowledge base has nothing on this question.") and the thread keeps it
    app, config = thread
    before = app.get_state(config).values
    with pytest.raises(InputError):
        app.invoke(Command(update={"messages": [HumanMessage(question)]}, goto="begin_turn"), config, context=Context())
    assert app.get_state(config).values == before


# -- finding 6: llm serve, tool schemas nothing can satisfy or no reply can hold ----------------------------------
@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": "^(a{100}){100}$"},  # forces 10,000 characters
        {"enum": []},  # nothing is one of no values
        {"type": "integer", "minimum": 10, "maximum": 1},
    ],
    ids=["pattern-forces-10000", "empty-enum", "minimum-above-maximum"],
)
def test_a_tool_schema_no_reply_can_satisfy_is_refused(schema):
    # each answered 200 after 120-190 s of the one engine (a one-string tool: 52 s on the same loaded machine),
    # with an empty message and finish_reason "length"
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "call the tool t"}],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "t",
                    "parameters": {"type": "object", "properties": {"a": schema}, "required": ["a"]},
                },
            }
        ],
        "tool_choice": "required",
    }
    with pytest.raises(RequestError, match="'t'"):
        parse_request(json.dumps(body).encode())


# -- findings 8 and 9 (severity 7): invisible characters inside a name; an identifier beside an unknown word ------
@pytest.mark.parametrize("query", ["Pg\u00adBouncer", "Pg\u200bBouncer", "P\u200bgBouncer"])
def test_an_invisible_character_inside_a_name_is_read_as_nothing(sample_rt, query):
    # a soft hyphen (a browser's hyphenation, copied) or a zero-width space: `Bouncer` was an unknown name and
    # nothing was found; `PgBouncer` is REFERENCE on the connection-limits page
    plain, typed = lookup(sample_rt, "PgBouncer"), lookup(sample_rt, query)
    assert typed.relevance_level == plain.relevance_level, typed.details.get("unknown_names")
    assert sent(typed) == sent(plain)


def test_an_error_code_beside_a_word_the_kb_never_writes_keeps_its_page_first(sample_rt):
    # `ERR_TIMEOUT on macOS` was REFERENCE with err-disk-full.md first (`ERR_TIMEOUT in Envoy`: PRECISE)
    result = lookup(sample_rt, "ERR_TIMEOUT on macOS")
    assert result.relevance_level is not None
    assert sent(result)[0] == "troubleshooting/err-timeout.md", sent(result)


# -- finding 10 (severity 8): a Command that starts a run at take_back or refuse ----------------------------------
@pytest.mark.parametrize("node", ["take_back", "refuse"])
def test_a_run_started_at_the_refusal_nodes_is_refused_in_one_line(thread, node):
    # `refuse` raised InputError with the thread's messages as its text; `take_back` a KeyError: 'error'
    app, config = thread
    before = app.get_state(config).values
    with pytest.raises(InputError) as caught:
        app.invoke(Command(goto=node), config, context=Context())
    assert str(caught.value) == f"a run cannot start at {node!r}: send the question as the run's input"
    assert app.get_state(config).values == before


# -- finding 13 (severity 8): a database URL naming a driver we do not ship --------------------------------------
def test_a_mysql_url_without_a_driver_is_one_line_naming_the_form_it_takes(tmp_path):
    # it was "error: ModuleNotFoundError: No module named 'MySQLdb'", exit 1
    r = run_cli(tmp_path, "kb", "list", EXECUTOR_DATABASE_URL="mysql://root:S3cretPw9@127.0.0.1:3306/x")
    assert r.returncode == 2, r.stderr
    assert "EXECUTOR_DATABASE_URL" in r.stderr and "mysql+pymysql://" in r.stderr, r.stderr
    assert "S3cretPw9" not in r.stderr + r.stdout


# -- finding 12 (severity 8): stdout on a full device: tests/integration/test_round18_commands.py


# -- finding 14 (severity 8): a combining mark on every letter ----------------------------------------------------
def test_a_word_marked_up_letter_by_letter_is_read_as_its_letters(sample_rt):
    # `ŕéd́íś eviction policy` was "nothing found" (`kb_coverage` 1.0: the keyword layers fold the marks)
    result = lookup(sample_rt, "r\u0301e\u0301d\u0301i\u0301s\u0301 eviction policy")
    assert result.relevance_level is not None, result.details.get("top_score")
    assert sent(result)[0] == "infrastructure/redis-eviction-policy.md", sent(result)
