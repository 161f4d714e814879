"""Round twenty-two's leftovers (issue 30; evals/review/hostile22-findings.md rows 8 and 11): the Host values a
wildcard MCP server answers to, said where it starts; `llm serve`'s sampling options passed to llama.cpp; Studio's
request checks on the graph's own catalog; a search of the threads' values is no state edit. Real servers and
clients: `executor mcp --http`, the local model endpoint with the bundled SmolLM2-135M, `langgraph dev` through
`langgraph_sdk`."""

import json
import os
import re
import subprocess
import sys

import pytest
from conftest import FIRST_Q, REPO, ingested_home, langgraph_dev, run_cli, sdk_thread, stop_process

pytestmark = pytest.mark.timeout(300)


# -- 1. the start line of `executor mcp --http` on every interface -------------------------------------------------
def _answered_names(line: str, port: int) -> list[str]:
    found = re.search(rf"it answers at http://NAME:{port}/mcp for NAME in (.+?) \(with the token\)", line)
    assert found, line
    return found[1].split(", ")


def _own_ipv4() -> str:
    found = [a for a in subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.split() if "." in a]
    if not found:
        pytest.skip("this machine has no IPv4 address besides loopback")
    return found[0]


@pytest.mark.parametrize("bind", ["0.0.0.0", "::"])
def test_a_server_on_every_interface_says_which_hosts_it_answers_to(tmp_path_factory, tmp_path, bind):
    """`executor mcp --http --host 0.0.0.0 --token T` said "on http://0.0.0.0:PORT/mcp", a URL it refuses (421),
    and nothing of the names it takes: its start line lists them, one line, without the token, and each name listed
    is answered (an address not listed is still refused)."""
    import socket

    from test_local_servers import INIT, TOKEN, post, start_mcp

    address = _own_ipv4()
    home = ingested_home(tmp_path_factory, "answers-to")
    log = open(tmp_path / "server.log", "w")
    proc, port = start_mcp(home, log, "--host", bind, "--token", TOKEN)
    auth = f"Authorization: Bearer {TOKEN}\r\n"
    body = json.dumps(INIT).encode()
    try:
        said = (tmp_path / "server.log").read_text().strip().splitlines()
        assert len(said) == 1 and said[0].startswith("executor MCP server on "), said
        assert TOKEN not in said[0]
        names = _answered_names(said[0], port)
        assert names[:3] == ["127.0.0.1", "localhost", "[::1]"]
        assert address in names and socket.gethostname().lower() in names
        for name in names:
            assert post(port, f"{name}:{port}", body, extra=auth) == 200, name
        assert post(port, f"192.0.2.254:{port}", body, extra=auth) == 421
    finally:
        stop_process(proc, log)
        run_cli(home, "graph", "stop")


def test_the_json_start_line_names_the_same_hosts(tmp_path_factory, tmp_path):
    """`--json`'s object, for a script that passes the URL on, carries the Host values too; the person's line names
    nothing more on loopback, where its URL is the one."""
    from conftest import free_port

    home = ingested_home(tmp_path_factory, "answers-to-json")
    port = free_port()
    env = {"EXECUTOR_HOME": str(home), "EXECUTOR_MCP_TOKEN": "t0ken-for-the-tests-0123456789"}
    args = [sys.executable, "-m", "executor.cli.main", "mcp", "--http", "--port", str(port)]
    for extra, check in (
        (["--host", "0.0.0.0", "--json"], "json"),
        ([], "loopback"),
    ):
        proc = subprocess.Popen(
            [*args, *extra],
            cwd=REPO,
            env={**os.environ, **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            if check == "json":
                started = json.loads(proc.stdout.readline())
                assert started["url"] == f"http://0.0.0.0:{port}/mcp"
                assert started["hosts"][:3] == [f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"]
                assert f"{_own_ipv4()}:{port}" in started["hosts"]
            else:
                line = proc.stderr.readline()
                assert line.startswith(f"executor MCP server on http://127.0.0.1:{port}/mcp (home ")
                assert "answers at" not in line and line.rstrip().endswith("; Ctrl-C stops it"), line
        finally:
            stop_process(proc)
        run_cli(home, "graph", "stop")


# -- 2. `llm serve`'s sampling options, applied by llama.cpp --------------------------------------------------------
SAY_HELLO = [{"role": "user", "content": "I said: say hello."}]


@pytest.fixture(scope="module")
def endpoint():
    from test_local_llm import bundled_endpoint

    with bundled_endpoint(2048) as ep:
        yield ep


def _token_ids(endpoint, text: str) -> list[int]:
    """`text` in the model's tokens, from an engine of its own (the endpoint's runs on the server's loop)."""
    import asyncio

    from executor.local_llm.engine import LlamaEngine

    async def tokenize() -> list[int]:
        engine = LlamaEngine(endpoint.options)
        try:
            return await engine.tokenize(text)
        finally:
            await engine.aclose()

    return asyncio.run(tokenize())


def _ask(endpoint, **options):
    """The endpoint's answer to SAY_HELLO (12 tokens at most, temperature 0 unless given): (status, body)."""
    import httpx

    body = {"messages": SAY_HELLO, "max_tokens": 12, "temperature": 0, "seed": 0, **options}
    r = httpx.post(f"{endpoint.base_url}/chat/completions", json=body, timeout=300)
    return r.status_code, r.json()


def _reply(endpoint, **options) -> str:
    status, answer = _ask(endpoint, **options)
    assert status == 200, answer
    return answer["choices"][0]["message"]["content"]


def test_a_token_banned_with_logit_bias_is_not_in_the_reply(endpoint):
    """`logit_bias` -100 on a token the reply would start with: refused 400 since round 22 (ignored before it, so a
    client's ban was not made); llama.cpp takes it, and the reply is without that token. +100 on a token makes the
    reply that token over and over."""
    greedy = _reply(endpoint)
    banned = _token_ids(endpoint, greedy)[0]
    reply = _reply(endpoint, logit_bias={str(banned): -100})
    assert reply != greedy and banned not in _token_ids(endpoint, reply), (greedy, reply)
    forced = _reply(endpoint, logit_bias={str(banned): 100}, max_tokens=3)
    assert forced and forced == forced[: len(forced) // 3] * 3, forced  # "III": the text of the one token


def test_top_p_and_the_penalties_are_applied(endpoint):
    """`top_p` near 0 leaves only the likeliest token, whatever the temperature and seed: the greedy reply; each
    penalty at 2 turns the reply from the words the conversation holds (it begins "I ..." unpenalised)."""
    greedy = _reply(endpoint)
    assert _reply(endpoint, temperature=2, seed=1) != greedy  # hot sampling alone strays from it
    for seed in (1, 2):
        assert _reply(endpoint, temperature=2, seed=seed, top_p=0) == greedy
    for penalty in ("frequency_penalty", "presence_penalty"):
        assert _reply(endpoint, **{penalty: 2}) != greedy, penalty
    assert _reply(endpoint, top_p=1, frequency_penalty=0, presence_penalty=0, logit_bias={}) == greedy


@pytest.mark.parametrize(
    ("bias", "said"),
    [
        ({"1000000": -100}, "logit_bias: token id 1000000 is not in this model's vocabulary (ids 0 to "),
        ({"Paris": -100}, "logit_bias.Paris.[key]: Input should be a valid integer"),
    ],
)
def test_a_logit_bias_of_no_token_of_the_model_is_refused_naming_it(endpoint, bias, said):
    """llama.cpp skips a token id past its vocabulary (and would take a key that is no id for text to tokenize):
    the client's ban would silently not be made."""
    status, answer = _ask(endpoint, logit_bias=bias)
    assert status == 400 and answer["error"]["message"].startswith(said), answer


# -- 3. Studio's request checks read the graph's own catalog ------------------------------------------------------
CHECKS = """
import asyncio, importlib.util, json, sys
from executor.stores import database

opened = []
real = database.Database.__init__
def counted(self, *args, **kwargs):
    opened.append(args)
    real(self, *args, **kwargs)
database.Database.__init__ = counted

def load(path, name):  # as langgraph-api loads langgraph.json's graph and http app: by path, under another name
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module

load(sys.argv[1] + "/executor/agent/studio.py", "executor__agent__studio")
http = load(sys.argv[1] + "/executor/agent/studio_http.py", "user_router_module")
before = len(opened)
scope = {"method": "POST", "path": "/assistants"}
refusal = asyncio.run(http.refused_runs(scope, {"graph_id": "executor", "context": {"kb": "nope"}}))
print(json.dumps({"opened": len(opened) - before, "refusal": refusal}))
"""


def test_studios_request_checks_open_no_database_of_their_own(tmp_path_factory):
    """`langgraph dev`'s request checks (an assistant every run of which the graph would refuse) built a Catalog on
    a Database of their own, beside the runtime's: the stores are built once, by the runtime, and the checks are the
    graph's, handed in where studio.py builds it. An unknown knowledge base is still refused."""
    home = ingested_home(tmp_path_factory, "studio-checks")
    env = {**os.environ, "EXECUTOR_HOME": str(home), "PYTHONPATH": str(REPO)}
    r = subprocess.run(
        [sys.executable, "-c", CHECKS, str(REPO)], capture_output=True, text=True, env=env, cwd=home, timeout=240
    )
    assert r.returncode == 0, r.stderr[-3000:]
    said = json.loads(r.stdout.strip().splitlines()[-1])
    assert said["opened"] == 0, said
    assert said["refusal"].startswith("every run of this assistant would be refused: ") and "'nope'" in said["refusal"]


# -- 4. a search of the threads' values is no state edit ----------------------------------------------------------
@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # PYTHONPATH: the server imports `executor` by name too, which the venv's editable install may place elsewhere
    with langgraph_dev(tmp_path_factory, "fix23b", PYTHONPATH=str(REPO)) as (url, _, _):
        yield url


def test_a_search_of_the_threads_messages_is_not_refused_as_a_state_edit(server):
    """`threads.search(values={"messages": ...})` (and `threads.count`) was refused 422 "invalid values.messages:
    ..." (a message a search names in part is no message a state edit could write), and so was a search on
    `memory`: both only filter threads, and are answered. An edit of that shape is still refused."""
    from langgraph_sdk.errors import APIStatusError

    client, thread_id = sdk_thread(server, FIRST_Q)
    assert thread_id in [t["thread_id"] for t in client.threads.search(values={"question": FIRST_Q}, limit=1000)]
    for values in ({"messages": [{"content": FIRST_Q}]}, {"memory": "garbage"}):
        found = client.threads.search(values=values, limit=1000)
        assert thread_id not in [t["thread_id"] for t in found], values  # nothing holds these values
        assert client.threads.count(values=values) == len(found), values
    with pytest.raises(APIStatusError) as refused:
        client.threads.update_state(thread_id, {"memory": "garbage"})
    assert refused.value.status_code == 422 and "invalid state edit of 'memory'" in str(refused.value)
