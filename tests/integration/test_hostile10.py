"""Round ten of the hostile pass (issue 30): the round-nine leftovers. Central European and Baltic pages in their
own code page (cp1250, cp1257) are read in it, not as windows-1252 or each other's page (mojibake indexed without
a word), while Western pages that fit windows-1252 as well as another page keep reading as windows-1252. A
`cache/` folder this user may not write is one warning, and `executor lookup` answers (the cache only saves work):
it failed with "cache/vocabulary-sample.tmp: Permission denied", exit 1. A graph whose entities the rule-based
extractor found (no front matter names one) that is removed or emptied after ingest is damaged, naming its folder,
not "empty, never built": the catalog records what the ingest built."""

import json
import shutil

import pytest
from conftest import copy_of, pristine_home, raw_mcp_stdio, run_cli
from test_hostile6_faults import run_unprivileged
from test_hostile6_servers import INIT, stdio_mcp

from executor.retrieval.converters import decode_text

POLISH = (
    "# Instrukcja\n\nGdy bramka zgłasza błąd ERR_TIMEOUT, należy zrestartować usługę. "
    "Źródło problemu leży w żądaniach.\n"
)
LITHUANIAN = "# Vadovas\n\nKai šliuzas praneša klaidą ERR_TIMEOUT, reikia iš naujo paleisti paslaugą.\n"


@pytest.mark.parametrize(
    ("text", "charset"),
    [
        (POLISH, "cp1250"),  # read as cp1257 before: "zg³asza b³¹d"
        (LITHUANIAN, "cp1257"),  # read as windows-1252 before: "ðliuzas praneða klaidà"
        ("Įlinkusi ąžuolo šaka ūžė virš upės.\n", "cp1257"),  # windows-1252 before: "Álinkusi àþuolo ðaka"
    ],
    ids=["polish-cp1250", "lithuanian-cp1257", "short-lithuanian-cp1257"],
)
def test_a_central_european_or_baltic_page_is_read_in_its_code_page(text, charset):
    assert decode_text(text.encode(charset)) == text


@pytest.mark.parametrize(
    ("text", "charset"),
    [
        ("Zażółć gęślą jaźń.\n", "cp1250"),
        ("Když brána hlásí chybu, je třeba službu restartovat. Příliš žluťoučký kůň úpěl ďábelské ódy.\n", "cp1250"),
        ("Kad vārteja ziņo par kļūdu, pakalpojums ir jārestartē. Pieprasījumi pārsniedz laika robežu.\n", "cp1257"),
        ("# Recette\n\nLa crème brûlée est un dessert français très apprécié. Où est le café?\n", "cp1252"),
        ("Crème\n", "cp1252"),
        ("Þetta er íslenskur texti: við þurfum að endurræsa þjónustuna.\n", "cp1252"),
        ("Die Größe der Übertragung ist für die Straße zu groß. Schöne Grüße.\n", "cp1252"),
        ("Когда шлюз сообщает об ошибке, перезапустите службу.\n", "cp1251"),
    ],
    ids=["polish-pangram", "czech", "latvian", "french", "one-french-word", "icelandic", "german", "russian"],
)
def test_pages_detection_already_read_right_still_are(text, charset):
    assert decode_text(text.encode(charset)) == text


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    home = pristine_home(tmp_path_factory, "hostile10-home")
    assert run_cli(home, "lookup", "ERR_TIMEOUT").returncode == 0  # writes the caches
    return home


@pytest.mark.parametrize("cached", [False, True], ids=["empty-cache", "warm-cache"])
@pytest.mark.parametrize("mode", [0o555, 0o000], ids=["read-only", "no-access"])
def test_a_cache_folder_this_user_may_not_write_is_one_warning_and_the_lookup_answers(pristine, tmp_path, cached, mode):
    home = copy_of(pristine, tmp_path)
    cache = home / "cache"
    if not cached:
        shutil.rmtree(cache)
        cache.mkdir()
    before = sorted(p.name for p in cache.iterdir())
    cache.chmod(mode)
    try:
        r = run_unprivileged(home, "lookup", "ERR_TIMEOUT", "--json")
    finally:
        cache.chmod(0o700)
        run_cli(home, "graph", "stop")
    assert r.returncode == 0, (r.returncode, r.stderr[-400:])
    data = json.loads(r.stdout)
    assert data["found"] and data["relevance_level"] == "PRECISE", data
    assert any("ERR_TIMEOUT" in hit["content"] for hit in data["primary"]), data["primary"]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning:") and str(cache) in lines[0], r.stderr
    assert sorted(p.name for p in cache.iterdir()) == before


@pytest.fixture(scope="module")
def extracted(tmp_path_factory):
    """A home whose one KB has a graph of entities the rule-based extractor found: no page names one."""
    root = tmp_path_factory.mktemp("hostile10-extracted")
    kb, home = root / "kb", root / "home"
    kb.mkdir()
    (kb / "runbook.md").write_text("# Gateway runbook\n\nRestart the gateway when ERR_TIMEOUT appears in its log.\n")
    (kb / "redis.md").write_text(
        "# Redis failover\n\nWhen Redis Sentinel reports ERR_FAILOVER, check Kubernetes and PostgreSQL replicas.\n"
    )
    assert run_cli(home, "kb", "create", "plain", "--entities", "Software,ErrorCode").returncode == 0
    r = run_cli(home, "ingest", str(kb), "--kb", "plain", "--json")
    run_cli(home, "graph", "stop")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["graph"]["entities"] > 0, r.stdout
    return home


@pytest.mark.parametrize("how", ["removed", "emptied"])
def test_a_lost_graph_of_extracted_entities_is_damaged_not_never_built(extracted, tmp_path, how):
    home = copy_of(extracted, tmp_path)
    graph = home / "graph"
    if how == "removed":
        shutil.rmtree(graph)
    else:
        for entry in graph.iterdir():
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    try:
        kg = run_cli(home, "kg", "ERR_TIMEOUT", "--kb", "plain")
        show = run_cli(home, "kb", "show", "plain", "--json")
    finally:
        run_cli(home, "graph", "stop")
    assert kg.returncode == 1, (kg.stdout[-300:], kg.stderr[-300:])
    lines = kg.stderr.strip().splitlines()
    assert len(lines) == 1 and "damaged" in lines[0] and str(graph) in lines[0], kg.stderr
    assert "never built" not in lines[0] and "ingest --rebuild" in lines[0], kg.stderr
    assert show.returncode == 0, show.stderr
    error = json.loads(show.stdout)["graph"]["error"]
    assert "damaged" in error and str(graph) in error and "never built" not in error, error


def test_a_response_the_host_sends_over_stdio_is_not_answered_and_the_server_answers_on(pristine):
    with stdio_mcp(pristine) as ask:
        for stray in (
            b'{"jsonrpc": "2.0", "id": 10, "result": {}}',
            b'{"jsonrpc": "2.0", "id": 11, "error": {"code": 1, "message": "m"}}',
        ):
            # answered "Internal Server Error" (a log notification) before, and "unknown request ID" on stderr
            answer = ask(stray + b'\n{"jsonrpc": "2.0", "id": 99, "method": "tools/list"}')
            assert answer.get("id") == 99 and "lookup_knowledge" in json.dumps(answer), answer


def _piped_mcp(home, *lines: dict, wait: float = 0):
    """`executor mcp` over stdio given `lines` (after the handshake) and then the end of its input, as
    `printf ... | executor mcp` gives them; `wait` seconds before the last line. Returns (exit code, answers by id)."""
    import time

    proc = raw_mcp_stdio(home)
    assert proc.stdin is not None
    handshake = [INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    for i, line in enumerate([*handshake, *lines]):
        if wait and i == len(handshake) + len(lines) - 1:
            time.sleep(wait)
        proc.stdin.write(json.dumps(line).encode() + b"\n")
        proc.stdin.flush()
    out, err = proc.communicate(timeout=240)
    answers = {m.get("id"): m for m in map(json.loads, out.decode().splitlines()) if "id" in m}
    return proc.returncode, answers, err.decode()


LOOKUP = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "lookup_knowledge", "arguments": {"query": "ERR_TIMEOUT"}},
}


def test_a_request_still_running_at_the_end_of_stdio_input_is_answered(pristine):
    # answered nothing before, exit 0: the SDK cancels what runs when its input ends
    code, answers, err = _piped_mcp(pristine, LOOKUP)
    assert code == 0, err[-500:]
    assert "PRECISE" in json.dumps(answers.get(2)), (answers, err[-500:])


def test_a_cancelled_request_is_answered_once_and_the_server_answers_on(pristine):
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
    tools = {"jsonrpc": "2.0", "id": 99, "method": "tools/list"}
    # before: "Request cancelled", then the finished lookup's own answer failed "Request already responded to",
    # which ended the server (exit 1, "ExceptionGroup"), with the next request unanswered
    code, answers, err = _piped_mcp(pristine, LOOKUP, cancel, tools, wait=10)
    assert code == 0 and "ExceptionGroup" not in err, err[-500:]
    assert "lookup_knowledge" in json.dumps(answers.get(99)), answers
    assert "result" in answers[2] or answers[2]["error"]["message"] == "Request cancelled", answers[2]
