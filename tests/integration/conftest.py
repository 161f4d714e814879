import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from executor.agent.runtime import Runtime
from executor.core.settings import SAMPLE_KB_PATH, Settings
from executor.retrieval.ingest import SAMPLE_EXTRACT_CONFIG, ingest

os.environ.setdefault("LANGSMITH_TRACING", "false")
REPO = Path(__file__).resolve().parents[2]

# CI starts every server the suite uses (`make services`) and sets this: a test that cannot reach one fails there,
# so Postgres, MariaDB, Neo4j or Chromium coverage cannot silently turn into skips.
REQUIRE_SERVICES = os.environ.get("EXECUTOR_REQUIRE_SERVICES") == "1"


def service_missing(message: str):
    """Skip a test whose server or tool is missing, saying why; fail it instead under EXECUTOR_REQUIRE_SERVICES=1."""
    if REQUIRE_SERVICES:
        pytest.fail(
            f"{message} (EXECUTOR_REQUIRE_SERVICES=1: `make services` starts the servers the tests need)", pytrace=False
        )
    pytest.skip(message)


# Settings choose Neo4j whenever NEO4J_URI is set (executor/core/settings.py). The Neo4j variables are taken out of the
# environment here, so every runtime and command line a test starts keeps its own embedded FalkorDB unless the
# test asks for the one Neo4j server all tests share (neo4j_settings(), neo4j_env(), with KB names of its own).
NEO4J = {
    name: os.environ.pop(name)
    for name in (
        "NEO4J_URI",
        "NEO4J_USER",
        "NEO4J_USERNAME",
        "NEO4J_PASSWORD",
        "NEO4J_DATABASE",
        "EXECUTOR_NEO4J_URI",
        "EXECUTOR_NEO4J_USER",
        "EXECUTOR_NEO4J_PASSWORD",
        "EXECUTOR_NEO4J_DATABASE",
    )
    if name in os.environ
}
# pytest-xdist's workers inherit the environment of the process that loaded this file first, after the lines above
# took the variables out: they are passed on under names no setting reads
_SAVED = "EXECUTOR_TESTS_SAVED_"
NEO4J.update({name.removeprefix(_SAVED): value for name, value in os.environ.items() if name.startswith(_SAVED)})
os.environ.update({_SAVED + name: value for name, value in NEO4J.items()})


def neo4j_env() -> dict[str, str]:
    """NEO4J_URI and its credentials as the environment gave them (skips, or fails, where none was given)."""
    uri = NEO4J.get("NEO4J_URI") or NEO4J.get("EXECUTOR_NEO4J_URI")
    if not uri:
        service_missing(
            "no Neo4j server: set NEO4J_URI (and NEO4J_USER, NEO4J_PASSWORD) to run these against one; "
            "services/neo4j/start.sh starts one"
        )
    env = {"NEO4J_URI": uri}
    for name in ("USER", "PASSWORD", "DATABASE"):
        value = NEO4J.get(f"NEO4J_{name}") or NEO4J.get(f"EXECUTOR_NEO4J_{name}")
        if value:
            env[f"NEO4J_{name}"] = value
    env.setdefault("NEO4J_USER", NEO4J.get("NEO4J_USERNAME", "neo4j"))
    return env


def neo4j_settings() -> dict[str, str | None]:
    """Settings fields for that server: `make_runtime(home, **neo4j_settings())` stores its graph there."""
    env = neo4j_env()
    return {
        "neo4j_uri": env["NEO4J_URI"],
        "neo4j_user": env["NEO4J_USER"],
        "neo4j_password": env.get("NEO4J_PASSWORD"),
        "neo4j_database": env.get("NEO4J_DATABASE"),
    }


def unique_kb(prefix: str) -> str:
    """A KB name no other test uses: the tests share one Neo4j, where a KB's graph is told apart by its name."""
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session", autouse=True)
def stop_graph_servers(tmp_path_factory):
    """Every embedded FalkorDB a test started (through a runtime or the CLI) is stopped at the end, all at once: one
    by one, each flushing its append-only file (the suite's last teardown, where they stop, took 114 s)."""
    yield
    from concurrent.futures import ThreadPoolExecutor

    from executor.stores.falkordb_server import FalkorDBServer

    folders = [pid_file.parent for pid_file in tmp_path_factory.getbasetemp().rglob("falkordb.pid")]
    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(lambda folder: FalkorDBServer(folder).stop(), folders))


def make_runtime(home: Path, **overrides) -> Runtime:
    return Runtime(Settings(home=home, **overrides))


@pytest.fixture(scope="session")
def sample_rt(tmp_path_factory):
    """One runtime over a fresh home holding the ingested sample KB (real Milvus Lite, real USE)."""
    home = tmp_path_factory.mktemp("home")
    rt = make_runtime(home)
    ingest(rt, SAMPLE_KB_PATH, "sample", progress=False, extract_config=SAMPLE_EXTRACT_CONFIG)
    yield rt
    rt.close()


def run_cli(home: Path, *args: str, timeout: int = 180, **env_extra) -> subprocess.CompletedProcess:
    env = {**os.environ, "EXECUTOR_HOME": str(home), **env_extra}
    return subprocess.run(
        [sys.executable, "-m", "executor.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        cwd=REPO,
    )


def ingested_home(tmp_path_factory, name: str) -> Path:
    """A fresh EXECUTOR_HOME with the sample KB ingested through the command line."""
    home = tmp_path_factory.mktemp(name)
    r = run_cli(home, "ingest", "--json")
    assert r.returncode == 0, r.stderr
    return home


def pristine_home(tmp_path_factory, name: str) -> Path:
    """An ingested home with its graph server stopped, for the tests that damage copies of it."""
    home = ingested_home(tmp_path_factory, name)
    run_cli(home, "graph", "stop")
    return home


def copy_of(home: Path, tmp_path: Path) -> Path:
    """A copy of an ingested home (its server's socket and pid file left behind) for a test to damage."""
    import shutil

    copy = tmp_path / "home"
    shutil.copytree(home, copy, ignore=shutil.ignore_patterns("*.sock", "falkordb.pid"))
    return copy


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_process(proc: subprocess.Popen, log=None) -> None:
    """Terminate a server a test started (kill it if it does not stop), and close its log."""
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    if log is not None:
        log.close()


# -- the graph ---------------------------------------------------------------
KNOWN_EDGES = [
    ("ComfyUI", "DEPENDS_ON", "Docker", 0.9),
    ("Docker", "RELATED_TO", "Kubernetes", 0.8),
    ("Kubernetes", "REFERENCES", "Helm", 0.6),
    ("ComfyUI", "REFERENCES", "Nginx", 0.5),
    ("Nginx", "DEPENDS_ON", "Kubernetes", 0.5),
    ("Redis", "CONFLICTS_WITH", "ComfyUI", 0.4),
    ("Helm", "DERIVED_FROM", "Docker", 0.7),  # closes the cycle Docker -> Kubernetes -> Helm -> Docker
]


def known_graph_data():
    """A small graph whose paths and scores are worked out by hand in test_graph_store.py."""
    from executor.stores.knowledge_graph import GraphData

    data = GraphData()
    for name in ["ComfyUI", "Docker", "Kubernetes", "Helm", "Nginx", "Redis", "Isolated"]:
        data.add_entity(name, "Software")
    data.relations = [
        {"type": t, "s": s.casefold(), "t": o.casefold(), "weight": w, "sources": ["known.md"]}
        for s, t, o, w in KNOWN_EDGES
    ]
    data.documents = [{"doc_key": "known.md", "title": "Known", "domain": "test"}]
    data.mentions = [{"doc": "known.md", "key": "comfyui", "count": 1}]
    return data


@pytest.fixture(scope="session")
def falkordb_server(tmp_path_factory):
    from executor.stores.falkordb_server import FalkorDBServer

    server = FalkorDBServer(tmp_path_factory.mktemp("falkordb"))
    server.ensure_running()
    yield server
    server.stop()


@pytest.fixture
def falkor_store(falkordb_server, request):
    """A Cypher graph store on a graph of its own in the shared test server."""
    from executor.stores.knowledge_graph_cypher import CypherGraphStore
    from executor.stores.knowledge_graph_drivers import FalkorDriver

    driver = FalkorDriver(
        f"t_{request.node.name[:40]}".replace("[", "_").replace("]", "_"), socket_path=str(falkordb_server.socket_path)
    )
    driver.delete_graph()
    store = CypherGraphStore(driver)
    yield store
    driver.delete_graph()
    store.close()


# -- production databases ----------------------------------------------------
SQL_SERVERS = {
    "postgres": "postgresql+psycopg://postgres@127.0.0.1:5432/test",
    "mysql": "mysql+pymysql://root@127.0.0.1:3306/test",
}


@contextmanager
def fresh_database(kind: str):
    """The URL of a schema (Postgres) or database (MySQL) of its own, dropped afterwards; skips where no server
    answers."""
    from sqlalchemy import create_engine, text

    admin_url = SQL_SERVERS[kind]
    name = f"executor_t_{uuid.uuid4().hex[:8]}"
    try:
        admin = create_engine(admin_url, connect_args={"connect_timeout": 3})
        with admin.connect() as c:
            # utf8mb4 whatever the server defaults to (a MariaDB started without Debian's config is latin1)
            c.execute(
                text(f"CREATE SCHEMA {name}" if kind == "postgres" else f"CREATE DATABASE {name} CHARACTER SET utf8mb4")
            )
            c.commit()
    except Exception as exc:  # no server on this machine
        service_missing(f"{kind} at {admin_url} is not reachable: {exc.__class__.__name__}")
    if kind == "postgres":
        url = f"{admin_url}?options=-csearch_path%3D{name}"
    else:
        url = admin_url.rsplit("/", 1)[0] + f"/{name}?charset=utf8mb4"
    try:
        yield url
    finally:
        from executor.stores.database import _engine

        _engine(url).dispose()
        with admin.connect() as c:
            c.execute(text(f"DROP SCHEMA {name} CASCADE" if kind == "postgres" else f"DROP DATABASE {name}"))
            c.commit()
        admin.dispose()


@pytest.fixture(params=sorted(SQL_SERVERS))
def db_url(request):
    """The URL of a fresh Postgres schema, then of a fresh MySQL database (each skips where no server answers)."""
    with fresh_database(request.param) as url:
        yield url


@pytest.fixture
def sql_store_sqlite(tmp_path):
    """The SQL graph backend on a SQLite file of its own."""
    from executor.stores.database import Database
    from executor.stores.knowledge_graph_sql import SqlGraphStore

    yield SqlGraphStore(Database(f"sqlite:///{tmp_path / 'graph.db'}"))


@pytest.fixture
def sql_store_postgres():
    """The SQL graph backend on a Postgres schema of its own (skips where no server answers)."""
    from executor.stores.database import Database
    from executor.stores.knowledge_graph_sql import SqlGraphStore

    with fresh_database("postgres") as url:
        yield SqlGraphStore(Database(url))


@pytest.fixture
def neo4j_store():
    """A Cypher graph store on the shared Neo4j at NEO4J_URI (skips, or fails under EXECUTOR_REQUIRE_SERVICES=1, without
    one). The KBs a test writes there are its own to drop: other tests' graphs live in the same database."""
    from executor.stores.knowledge_graph_cypher import CypherGraphStore
    from executor.stores.knowledge_graph_drivers import Neo4jDriver

    s = neo4j_settings()
    store = CypherGraphStore(Neo4jDriver(s["neo4j_uri"], s["neo4j_user"], s["neo4j_password"], s["neo4j_database"]))
    yield store
    store.close()


# -- clients from npm (the MCP Inspector, LangGraph's JS SDK) ----------------------------------------------------
NPM_CACHE = Path(os.environ.get("EXECUTOR_TEST_NPM_CACHE") or Path(tempfile.gettempdir()) / "executor-test-npm")


@contextmanager
def langgraph_dev(tmp_path_factory, name: str, **env_extra):
    """`langgraph dev` on this checkout's langgraph.json (its paths made absolute, in a directory of its own: the
    server writes its thread state to `.langgraph_api/` there, never in the checkout) over a fresh home holding the
    ingested sample KB, without the caller's OpenAI variables unless `env_extra` sets them; yields (url, home,
    workdir)."""
    langgraph = Path(sys.executable).with_name("langgraph")
    if not langgraph.exists() and not shutil.which("langgraph"):
        pytest.fail("langgraph-cli is a dev dependency: reinstall with .[dev]")
    home = tmp_path_factory.mktemp(f"{name}-home")
    assert run_cli(home, "ingest", "--json").returncode == 0
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env.update(
        EXECUTOR_HOME=str(home),
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        LANGGRAPH_NO_VERSION_CHECK="true",
        LANGSMITH_TRACING="false",
        **env_extra,
    )
    workdir = tmp_path_factory.mktemp(f"{name}-cwd")
    config = json.loads((REPO / "langgraph.json").read_text())
    config["dependencies"] = [str(REPO)]
    config["graphs"] = {g: str(REPO / spec.removeprefix("./")) for g, spec in config["graphs"].items()}
    config["http"]["app"] = str(REPO / config["http"]["app"].removeprefix("./"))
    (workdir / "langgraph.json").write_text(json.dumps(config))
    port = free_port()
    log = open(home / "langgraph-dev.log", "w")
    args = ["dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--port", str(port), "--config"]
    proc = subprocess.Popen(
        [str(langgraph), *args, str(workdir / "langgraph.json")],
        cwd=workdir,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        if proc.poll() is not None:
            pytest.fail(f"langgraph dev exited with {proc.returncode}: see {home / 'langgraph-dev.log'}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"langgraph dev did not answer on {url} within 120 s")
        try:
            with urllib.request.urlopen(f"{url}/ok", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            time.sleep(0.5)
    try:
        yield url, home, workdir
    finally:
        stop_process(proc, log)
        run_cli(home, "graph", "stop")


def npm_package(spec: str) -> Path:
    """A folder where `spec` (`name@version`) is installed, under the test npm cache (EXECUTOR_TEST_NPM_CACHE, by
    default in the system's temp folder, never the checkout), installed on first use. The test skips, saying why
    (fails under EXECUTOR_REQUIRE_SERVICES=1), only when the client cannot be installed: no node/npm on PATH, or
    the registry cannot be reached."""
    import shutil

    if not (shutil.which("node") and shutil.which("npm")):
        service_missing(f"{spec}: node and npm are not on PATH, so this client cannot be installed")
    import fcntl

    # the JavaScript in it runs as the user running the tests: a cache (or a lock file's symlink) another user of
    # the machine put in the shared temp folder must not be trusted (issue 30 round 17 finding 9)
    folder = own_folder(own_folder(NPM_CACHE) / spec.replace("/", "__").replace("@", "_at_"))
    # the suite's workers (pytest-xdist) may ask for the same client at once: one installs, the others wait for it
    with open(folder.with_name(folder.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / ".installed").exists():
            done = subprocess.run(
                ["npm", "install", "--prefix", str(folder), "--no-audit", "--no-fund", "--loglevel=error", spec],
                capture_output=True,
                text=True,
                timeout=600,
            )
            if done.returncode != 0:
                service_missing(
                    f"{spec} could not be installed with npm: {(done.stderr or done.stdout).strip()[-300:]}"
                )
            (folder / ".installed").write_text(spec)
    return folder


def own_folder(path: Path) -> Path:
    """`path`, made if missing (0700); the test fails when it is not a folder of this user's that only they can
    write: what is in it may then be anybody's."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = path.lstat()
    if stat.S_ISLNK(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        pytest.fail(
            f"{path} is not this user's own folder (owner uid {st.st_uid}, mode {stat.filemode(st.st_mode)}): another "
            "user could have put code in it; remove it, or set EXECUTOR_TEST_NPM_CACHE to a folder of yours"
        )
    return path


@asynccontextmanager
async def mcp_stdio(env: dict, cwd: Path, log: Path):
    """The `mcp` SDK's client on `executor mcp` over stdio: a subprocess with `env`, started in `cwd`, its stderr
    appended to `log`; yields the initialised ClientSession."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "executor.cli.main", "mcp"], env=env, cwd=str(cwd)
    )
    with open(log, "a") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            yield client


def raw_request(port: int, head: str, body: bytes = b"", host: str = "127.0.0.1") -> tuple[int, bytes]:
    """One HTTP/1.1 request over a plain socket (any Host header, any Content-Length): (status, response)."""
    with socket.create_connection((host, port), timeout=30) as sock:
        sock.sendall(head.encode("latin-1") + b"\r\n" + body)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    return int(data.split(b" ", 2)[1]), data


def last_error_line(r, code: int) -> str:
    """The command's last stderr line, its one error: exit `code`, `error: ...`, no traceback."""
    assert r.returncode == code, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    lines = r.stderr.strip().splitlines()
    assert lines and lines[-1].startswith("error: "), r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    return lines[-1]


def write_pages(folder: Path, pages: dict[str, str]) -> Path:
    """A folder of pages to ingest, `name -> text` (a name may hold subfolders); the folder."""
    for name, text in pages.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def raw_mcp_stdio(home: Path) -> subprocess.Popen:
    """`executor mcp` over stdio on `home` as a bare process (bytes in, bytes out), for the tests that speak to it
    without the SDK's client: malformed lines, a host that goes away."""
    return subprocess.Popen(
        [sys.executable, "-m", "executor.cli.main", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "EXECUTOR_HOME": str(home)},
        cwd=REPO,
    )


# -- a thread of two answered turns (tests/integration/test_refused_run_thread.py, test_hostile18.py) ---------------
FIRST_Q = "ERR_TIMEOUT 是什么？"
NEXT_Q = "MySQL 连接池怎么配置？"


@pytest.fixture
def thread(sample_rt, tmp_path):
    """The graph over a real SQLite checkpointer, and a thread that asked FIRST_Q and NEXT_Q (both answered)."""
    import sqlite3

    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.sqlite import SqliteSaver

    from executor.agent.planner import OfflinePlanner
    from executor.nodes.state import Context

    with sqlite3.connect(tmp_path / "checkpoints.sqlite", check_same_thread=False) as db:
        app = sample_rt.app(OfflinePlanner(), "offline", checkpointer=SqliteSaver(db))
        config = {"configurable": {"thread_id": uuid.uuid4().hex}}
        for question in (FIRST_Q, NEXT_Q):
            app.invoke({"messages": [HumanMessage(question)]}, config, context=Context())
        yield app, config


def asked(values: dict) -> list[str]:
    """The questions of a thread's values, in order."""
    from langchain_core.messages import HumanMessage

    from executor.nodes.common import text_of

    return [text_of(m) for m in values["messages"] if isinstance(m, HumanMessage)]


def launched(*steps: str) -> list[str]:
    """The head of a command line that runs `steps` (Python statements; `os` and `signal` imported) and then
    becomes the rest of the line: what a shell's `<&-` or `trap '' INT` does before the command starts.

    Not `preexec_fn`: it makes `subprocess` fork this process, whose gRPC threads (pymilvus's) the child then
    restarts, and gRPC 1.80-1.83 crash that child before its exec now and then: "E... ev_epoll1_linux.cc:373] ...
    epoll_wait error: Bad file descriptor" instead of the command's own line (grpc/grpc#43055; CI, sessions 24-26).
    `executor` itself never forks: its children start through vfork (`start_new_session`) or "spawn"."""
    return [sys.executable, "-c", "; ".join(["import os, signal, sys", *steps, "os.execv(sys.argv[1], sys.argv[1:])"])]


def sdk_thread(url: str, *questions: str):
    """A thread on the `langgraph dev` server at `url` that asked `questions` (each answered): (client, thread id)."""
    from langgraph_sdk import get_sync_client

    client = get_sync_client(url=url)
    thread_id = client.threads.create()["thread_id"]
    for question in questions:
        client.runs.wait(thread_id, "executor", input={"messages": [{"role": "user", "content": question}]})
    return client, thread_id


def hold_vectors(home):
    """Another process holding the home's Milvus Lite file (an `executor mcp --http` left running)."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-W",
            "ignore",
            "-c",
            "import sys,time; from executor.stores.vectors import MilvusVectorStore; "
            "MilvusVectorStore(sys.argv[1]).client; print('ready', flush=True); time.sleep(120)",
            str(home / "milvus.db"),
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
    return holder
