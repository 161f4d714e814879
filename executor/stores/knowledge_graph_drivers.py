"""Cypher drivers: one narrow interface, FalkorDB and Neo4j behind it.

Traversal Cypher is shared (executor/stores/knowledge_graph_cypher.py). Everything that differs between
the two engines lives here, in the `Dialect` of each driver: index DDL and how a subquery
imports variables. Both run the whole graph-store suite (tests/integration/test_graph_store.py;
Neo4j 5.26 through services/neo4j/start.sh).
Both drivers return rows as plain dicts of plain Python values, so callers
never see a driver's node, edge or record types.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, LiteralString, Protocol, cast

from executor.core.errors import BackendError, EmptyGraphError, display_url, first_line


@dataclass(frozen=True)
class Dialect:
    name: str
    index_statements: tuple[str, ...]
    # how a subquery that sees outer variables opens: FalkorDB knows only the importing WITH,
    # Neo4j 5 deprecated that form for a variable scope clause
    subquery_open: str
    # FalkorDB has no IF NOT EXISTS on indexes: creating one twice is an error we ignore
    duplicate_index_error: str | None = None

    def call(self, variables: str) -> str:
        return self.subquery_open.format(vars=variables)


FALKORDB = Dialect(
    name="falkordb",
    index_statements=(
        "CREATE INDEX FOR (e:Entity) ON (e.key)",
        "CREATE INDEX FOR (e:Entity) ON (e.kb)",
        "CREATE INDEX FOR (d:Document) ON (d.doc_key)",
        "CREATE INDEX FOR (d:Document) ON (d.kb)",
    ),
    subquery_open="CALL {{ WITH {vars}",
    duplicate_index_error="already indexed",
)

NEO4J = Dialect(
    name="neo4j",
    # Composite indexes only. With a second index on `kb` alone (as FalkorDB has), Neo4j 5.26 planned the bulk
    # load's second endpoint through it and filtered the KB's every node by key (EXPLAIN): 100,000 edges loaded
    # 1.7x slower. Without one, the reads of a whole KB (stats, snapshots, drops) scan the Entity label.
    index_statements=(
        "CREATE INDEX executor_entity_key IF NOT EXISTS FOR (e:Entity) ON (e.kb, e.key)",
        "CREATE INDEX executor_document_key IF NOT EXISTS FOR (d:Document) ON (d.kb, d.doc_key)",
    ),
    subquery_open="CALL ({vars}) {{",
)


class CypherDriver(Protocol):
    dialect: Dialect
    description: str

    def run(self, query: str, params: dict | None = None, *, write: bool = False) -> list[dict[str, Any]]: ...

    def run_scalars(self, query: str, params: dict | None = None) -> list[list]:
        """A bulk read of scalar columns, positional: strings as str, integers as int, null as None, doubles
        as float or as their decimal text (FalkorDB's verbose reply): the caller converts them."""
        ...

    def close(self) -> None: ...


def ensure_indexes(driver: CypherDriver) -> None:
    for statement in driver.dialect.index_statements:
        try:
            driver.run(statement, write=True)
        except BackendError as exc:
            marker = driver.dialect.duplicate_index_error
            if not (marker and marker in str(exc)):
                raise


# NUL and the other control characters but tab and newlines; DEL and the C1 block
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def clean_params(value: Any) -> Any:
    """Parameter values safe to paste into query text: the falkordb client writes parameters into the
    query itself, and one NUL makes the server reject the whole query (a lone surrogate cannot even be
    encoded). Control characters are dropped, lone surrogates become U+FFFD. Neo4j binds parameters, but
    its driver cleans them too: a graph holds the same names whichever engine stores it."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", _CONTROL.sub("", value))
    if isinstance(value, dict):
        return {clean_params(k): clean_params(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_params(v) for v in value]
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class FalkorDriver:
    """The falkordb client on a unix socket (embedded server) or a URL (falkor://host:port)."""

    def __init__(
        self,
        graph: str,
        *,
        socket_path: str | None = None,
        url: str | None = None,
        timeout_s: float = 10.0,
        restart: Callable[[], object] | None = None,
    ):
        """`restart`: how to bring the embedded server back (start it, return its socket path). A long-lived
        process (chat, Studio) then survives the server dying: the next query restarts it and retries once."""
        import redis

        self.dialect = FALKORDB
        self.timeout_ms = max(1, int(timeout_s * 1000))
        self._where = display_url(url) if url else socket_path
        self.description = f"FalkorDB graph {graph!r} at {self._where}"
        self._redis_errors = (redis.RedisError, OSError)
        self._name, self._socket_path, self._url, self._timeout_s = graph, socket_path, url, timeout_s
        self._restart = restart
        self._connect()

    def _connect(self) -> None:
        from falkordb import FalkorDB

        timeouts = {"socket_timeout": self._timeout_s + 5, "socket_connect_timeout": 5}
        try:
            if self._url:
                self._db = FalkorDB.from_url(self._url, **timeouts)
            else:
                self._db = FalkorDB(unix_socket_path=self._socket_path, **timeouts)
        except self._redis_errors as exc:
            raise BackendError(f"graph unavailable: {self.description}: {first_line(exc)}") from exc
        self._graph = self._db.select_graph(self._name)

    def run(self, query: str, params: dict | None = None, *, write: bool = False) -> list[dict[str, Any]]:
        def rows(params: dict) -> list[dict[str, Any]]:
            call = self._graph.query if write else self._graph.ro_query  # the graph of this connection (restarts)
            result = call(query, params, timeout=self.timeout_ms)
            names = [h[1] if isinstance(h, (list, tuple)) else h for h in (result.header or [])]
            return [dict(zip(names, _plain(row))) for row in result.result_set]

        return self._retrying(rows, params)

    def run_scalars(self, query: str, params: dict | None = None) -> list[list]:
        """A read whose columns are scalars, as positional rows in the server's verbose reply: strings and
        doubles as text (the caller knows its columns' types), integers as int, null as None. The falkordb
        client parses its compact reply cell by cell in Python: for the 400,000 cells of a 100,000-relation
        snapshot that took 1.2 s against 0.45 s for this."""
        import redis
        from falkordb.helpers import stringify_param_value

        def rows(params: dict) -> list[list]:
            values = " ".join(f"{k}={stringify_param_value(v)}" for k, v in params.items())
            header = f"CYPHER {values} " if values else ""
            reply = cast(  # redis-py's type covers its asyncio client too
                list,
                self._db.connection.execute_command(
                    "GRAPH.RO_QUERY", self._name, header + query, "timeout", self.timeout_ms
                ),
            )
            for part in (reply[0], reply[-1]):  # as the falkordb client checks: an error may come inside the reply
                if isinstance(part, redis.ResponseError):
                    raise part
            return reply[1] if len(reply) > 1 else []  # the client's connection decodes replies to str

        return self._retrying(rows, params)

    def _retrying(self, rows: Callable[[dict], list], params: dict | None) -> list:
        import redis

        cleaned: dict = clean_params(params or {})
        try:
            return self._run(rows, cleaned)
        except redis.ConnectionError as exc:
            if self._restart is None:
                raise BackendError(f"graph unavailable: {self.description}: {first_line(exc)}") from exc
        self.close()
        self._restart()  # the embedded server died (or was stopped): start it again, once
        self._connect()
        try:
            return self._run(rows, cleaned)
        except (redis.ConnectionError, OSError) as exc:
            raise BackendError(f"graph unavailable: {self.description}: {first_line(exc)}") from exc

    def _run(self, rows: Callable[[dict], list], params: dict) -> list:
        import redis

        try:
            return rows(params)
        except redis.ResponseError as exc:
            message = first_line(exc)
            if "timed out" in message.lower():
                raise BackendError(f"graph query timed out after {self.timeout_ms} ms") from exc
            if "empty key" in message:  # what FalkorDB answers a read on a graph that holds nothing at all
                if others := self._other_graphs():
                    raise BackendError(self._not_here(others)) from exc
                raise EmptyGraphError(
                    f"the {self.description} is empty: it was never built, or its files were removed or emptied; "
                    "run `executor ingest --rebuild`",
                    str(Path(self._socket_path).parent) if self._socket_path else self.description,
                ) from exc
            raise BackendError(f"graph query failed: {message}") from exc
        except redis.ConnectionError:
            raise  # _retrying() decides: restart the embedded server, or report it unavailable
        except self._redis_errors as exc:
            raise BackendError(f"graph unavailable: {self.description}: {first_line(exc)}") from exc

    def _other_graphs(self) -> list[str]:
        """The graphs the server holds under other names than this one's, or none when it cannot say."""
        try:
            names = self._db.list_graphs()
        except self._redis_errors:
            return []  # the question is only asked to word an error: the error is the read's, not this one's
        return sorted(str(n) for n in names if str(n) != self._name)

    def _not_here(self, others: list[str]) -> str:
        """A graph name the server holds nothing under while it holds others: EXECUTOR_GRAPH_NAME not the name the
        knowledge bases were built under (a second deployment's, a typo). Nothing is damaged: it was "the graph ...
        is damaged ... move it away", which loses every KB's graph (hostile23 finding 4)."""
        shown = ", ".join(repr(n) for n in others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        return (
            f"no graph named {self._name!r} (EXECUTOR_GRAPH_NAME) in the FalkorDB at {self._where}: "
            f"it holds {shown}; set EXECUTOR_GRAPH_NAME to the name the knowledge bases were built under, or run "
            f"`executor ingest --rebuild` to build them under {self._name!r}"
        )

    def delete_graph(self) -> None:
        """Drop the whole graph (tests and benchmarks start from nothing)."""
        import redis

        try:
            self._graph.delete()
        except redis.ResponseError:
            pass  # no such graph yet

    def close(self) -> None:
        try:
            self._db.connection.close()
        except Exception:  # noqa: BLE001 - closing a dead connection must not mask the real error
            pass


# beyond the graph timeout, what a Neo4j call may take: the connect (5 s) and the connection's acquisition
NO_ANSWER_GRACE_S = 10


class Neo4jDriver:
    """The official neo4j driver (Neo4j in production; FalkorDB's Bolt port in tests)."""

    def __init__(
        self,
        uri: str,
        user: str | None,
        password: str | None,
        database: str | None,
        timeout_s: float = 10.0,
        plain_bolt: bool = False,
        dialect: Dialect = NEO4J,
    ):
        """`plain_bolt`: send no database, access mode or timeout with a query. FalkorDB's
        experimental Bolt port answers such a query with no rows (seen here), so the suite
        against it sets this, with `dialect=FALKORDB`; a real Neo4j gets neither."""
        import logging

        import neo4j

        # the driver logs a failed routing or connection attempt on its own before raising it (one raw line on
        # the terminal, no handler configured); the error is ours to say, once
        logging.getLogger("neo4j").setLevel(logging.CRITICAL)
        self.dialect = dialect
        self.timeout_s = timeout_s
        self.database = database
        self.plain_bolt = plain_bolt
        self.description = f"Neo4j at {display_url(uri)}" + (f" (database {database})" if database else "")
        self._neo4j = neo4j
        self._uri, self._auth = uri, ((user, password or "") if user else None)
        self._driver = self._open()

    def _open(self):
        neo4j = self._neo4j
        try:
            return neo4j.GraphDatabase.driver(
                self._uri,
                auth=self._auth,
                connection_timeout=5,
                connection_acquisition_timeout=self.timeout_s + 5,
                max_transaction_retry_time=0,
                # "relationship type does not exist" for every whitelisted type a graph has no edge of yet:
                # the server's hints are not errors, and logged per query they drown the real warnings
                notifications_min_severity="OFF",
            )
        except (ValueError, neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
            raise BackendError(f"graph unavailable: {self.description}: {first_line(exc)}") from exc

    def run(self, query: str, params: dict | None = None, *, write: bool = False) -> list[dict[str, Any]]:
        """The query's rows, or an error within the graph timeout and the connect time. The driver has no read
        timeout of its own: a server that stops answering with the connection open (SIGSTOP, a swap storm, a hung
        proxy) held a call for the server's `connection.recv_timeout_seconds` hint, 120 s, whatever
        EXECUTOR_GRAPH_TIMEOUT_S said (the query's timeout is the server's to apply; hostile18b finding 2). The
        query runs on a thread of its own; past the bound, the driver is closed (which ends the hung read) and a
        new one opened for the next call."""
        box: dict[str, Any] = {}

        def work() -> None:
            try:
                box["rows"] = self._run(query, params, write)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread as it is
                box["error"] = exc

        worker = threading.Thread(target=work, name="neo4j-query", daemon=True)
        worker.start()
        worker.join(self.timeout_s + NO_ANSWER_GRACE_S)
        if worker.is_alive():
            hung, self._driver = self._driver, self._open()
            hung.close()
            raise BackendError(
                f"graph unavailable: {self.description}: no answer within EXECUTOR_GRAPH_TIMEOUT_S={self.timeout_s:g} s"
            )
        if "error" in box:
            raise box["error"]
        return box["rows"]

    def _run(self, query: str, params: dict | None, write: bool) -> list[dict[str, Any]]:
        neo4j = self._neo4j
        text = cast(LiteralString, query)  # names from the whitelists only; values go as parameters
        if self.plain_bolt:
            session_args, statement = {}, text
        else:
            mode = neo4j.WRITE_ACCESS if write else neo4j.READ_ACCESS
            session_args = {"database": self.database, "default_access_mode": mode}
            statement = neo4j.Query(text, timeout=self.timeout_s)
        try:
            with self._driver.session(**session_args) as session:
                # cleaned as FalkorDriver cleans them, so both engines store and look up the same values
                return [_plain(record.data()) for record in session.run(statement, clean_params(params or {}))]
        except neo4j.exceptions.Neo4jError as exc:  # the server answered, with an error
            raise BackendError(f"graph query failed: {first_line(exc.message or exc)}") from exc
        except (neo4j.exceptions.DriverError, OSError) as exc:
            raise BackendError(f"graph unavailable: {self.description}: {first_line(exc)}") from exc

    def run_scalars(self, query: str, params: dict | None = None) -> list[list]:
        """A read whose columns are scalars, as positional rows (FalkorDriver.run_scalars' shape; the values
        keep their types here)."""
        return [list(row.values()) for row in self.run(query, params)]

    def close(self) -> None:
        self._driver.close()
