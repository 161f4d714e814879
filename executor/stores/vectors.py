"""Chunk vectors on Milvus: `stores.vector_store.VectorStore` on Milvus Lite (a file path, the default under
EXECUTOR_HOME) or a Milvus server (an http(s)/tcp/unix URI); `make_vector_store` builds it.

Relevance is graded from the dense squared-L2 distance. Hybrid search returns
RRF ranks instead, so the dense vectors come back with each hit and the
distance is computed here, exactly as Milvus defines metric L2.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import resource
import shutil
import signal
import subprocess
import threading
import time
import warnings
from collections.abc import Callable
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TypeVar, cast

import numpy as np

from executor.core.errors import BackendError, display_url, first_line
from executor.core.fs import HeldLock, private_umask, stderr_to
from executor.stores import vector_versions
from executor.stores.catalog import ingest_hint
from executor.stores.embedders import Embedder
from executor.stores.integrity import sqlite_damage
from executor.stores.vector_hits import ChunkHit

DISK_FULL_BYTES = 4 << 20  # less free than this under a Lite file whose write failed: the disk is full
# a killed Lite server's socket is closed a moment before the process can be reaped: how long a read that lost its
# connection waits to see the process gone (a server that is still running after it failed for another reason)
LITE_EXIT_S = 2.0
# Lite's channel without gRPC keepalive: pymilvus pings every 10 s and, with no answer in 5, drops the connection;
# a stopped (SIGSTOP) server then made the next call wait for a reconnection, 30 s more than its own timeout. A
# local socket needs no keepalive: a server that dies closes it, and a read's timeout bounds a hung one.
LITE_GRPC_OPTIONS = {"grpc.keepalive_time_ms": 2**31 - 1, "grpc.keepalive_permit_without_calls": False}
T = TypeVar("T")

# milvus-lite 2.5.1 imports pkg_resources (hence setuptools<81), which warns on every start.
warnings.filterwarnings("ignore", message="pkg_resources is deprecated", category=UserWarning)

TEXT_MAX = 16_384
GENERATION, DONE = "_G", "_DONE"  # a rebuild's collection, and its mark of completion (collection_name)
DESCRIPTION_PREFIX = "executor:"
OUTPUT_FIELDS = ["chunk_id", "doc_key", "chunk_index", "domain", "title", "text", "dense"]
# sparse vectors came with Milvus 2.4, the BM25 function with 2.5; older servers (2.3 is still in the field)
# get a dense-only collection and a warning instead of an error
SPARSE_SINCE, BM25_SINCE = (2, 4), (2, 5)


def server_version(text: str) -> tuple[int, int] | None:
    """(major, minor) from a Milvus version string such as 'v2.3.5' or '2.5.4-gpu'; None if unreadable."""
    import re

    m = re.match(r"v?(\d+)\.(\d+)", (text or "").strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


def lexical_support(version: tuple[int, int] | None, needs_bm25: bool) -> bool:
    """Whether a server of this version can keep the lexical half of hybrid search (unknown: assume it can)."""
    if version is None:
        return True
    return version >= (BM25_SINCE if needs_bm25 else SPARSE_SINCE)


def is_server_uri(uri: str) -> bool:
    """A Milvus server's URI; anything else is the path of a Milvus Lite file."""
    return uri.startswith(("http://", "https://", "tcp://", "unix:"))


NOT_LISTENING = "executor: the Milvus Lite server did not listen in time; stopped"


class _ListeningPopen(subprocess.Popen):
    """milvus-lite (pinned 2.5.1, `milvus_lite/server.py`) starts its server and then waits a fixed 0.5 s to see
    that it did not exit: half of a command's start-up. The server listens on its socket ~20 ms after it starts.
    This wait returns as theirs does, only when it knows: an exit is their failure, a socket that accepts a
    connection their success, and after `listen_s` (the store's timeout) with neither, their failure: the server
    is stopped and says so in its log (pymilvus would wait out its own timeout again). Their fixed 0.5 s is no
    sign of a listening server on a loaded machine, nor is the socket's file, which appears at bind(), before
    listen(): pymilvus's first call (no wait-for-ready) was refused in between, a failed command. Every other
    wait is Popen's own."""

    listen_s = 30.0  # set by the store that starts the server: EXECUTOR_MILVUS_TIMEOUT_S

    def __init__(self, *args, **kwargs):
        # a session of its own: Ctrl-C at a terminal signals the whole foreground process group, and the server
        # it killed made the chat's next question fail ("Fail connecting to server"). It needs no signal: it
        # stops when this process's lock on its file is released, at exit or death.
        kwargs.setdefault("start_new_session", True)
        super().__init__(*args, **kwargs)

    def wait(self, timeout=None):
        if timeout is None or timeout != 0.5 or not isinstance(self.args, list) or len(self.args) < 3:
            return super().wait(timeout)
        # the server's arguments: binary, data file, "unix:" + socket path, ...
        socket = Path(str(self.args[2]).removeprefix("unix:"))
        deadline = time.monotonic() + self.listen_s
        while time.monotonic() < deadline:
            if self.poll() is not None:
                return self.returncode
            if _accepts(socket):
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(0.005)
        self.kill()
        os.write(2, f"{NOT_LISTENING}\n".encode())  # file descriptor 2 is the server's log here (stderr_to)
        return super().wait()


def _accepts(path: Path) -> bool:
    """Whether a server listens on this unix socket (connects, then hangs up)."""
    import socket

    if not path.exists():
        return False
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(0.1)
        probe.connect(str(path))
        return True
    except OSError:
        return False
    finally:
        probe.close()


def _start_lite_when_listening(listen_s: float) -> None:
    from types import SimpleNamespace

    from milvus_lite import server

    _ListeningPopen.listen_s = listen_s
    if getattr(server.subprocess, "Popen", None) is not _ListeningPopen:
        server.subprocess = SimpleNamespace(Popen=_ListeningPopen, TimeoutExpired=subprocess.TimeoutExpired)


def _truncate_utf8(text: str, limit: int) -> str:
    data = text.encode("utf-8")
    return text if len(data) <= limit else data[:limit].decode("utf-8", errors="ignore")


def _literal(value: str) -> str:
    # Milvus Lite 2.5 has no filter parameters; callers pass only values that
    # passed the doc-key / domain whitelist, and json quoting keeps them literal.
    return json.dumps(value, ensure_ascii=False)


class MilvusVectorStore:
    """`VectorStore` on Milvus: Lite for a file path, a server for a server URI (`is_server_uri`)."""

    def __init__(self, uri: str, token: str | None = None, timeout_s: float = 30.0, dense_index: str = "AUTOINDEX"):
        self.uri = uri
        self.dense_index = dense_index
        self.is_lite = not is_server_uri(uri)
        self._token = token
        self._timeout = timeout_s
        self._client = None
        self._opening = threading.Lock()  # held while the client is being opened, by any thread
        self._opener: threading.Thread | None = None
        self._lock = HeldLock(self.lock_path) if self.is_lite else None
        self._log_seen: tuple[Path, int] | None = None  # the Lite server's log, and its size when it started
        self._lexical: dict[str, bool] = {}  # kb -> whether its collection has the sparse half
        # kb -> its collection's recorded embedder, Lite only: a Lite file has one process at a time, this
        # one, so only create() and drop() here change it (a server's collections can change under us)
        self._recorded: dict[str, dict | None] = {}
        self._live: dict[str, str] = {}  # kb -> the collection holding its vectors (Lite only; see collection_name)

    # -- connection ---------------------------------------------------------
    @property
    def lock_path(self) -> Path:
        """Our lock, beside the Lite file. milvus-lite has its own (`.milvus.db.lock`), but a process that
        fails to take it unlinks it on the way out, after which a third process opens the file too."""
        path = Path(self.uri)
        return path.with_name(f".{path.name}.executor.lock")

    @property
    def client(self):
        if self._client is None:
            with self._opening:  # a background open in progress finishes first (or fails, and this tries again)
                if self._client is None:
                    self._client = self._open_lite() if self.is_lite else self._connect(self.uri)
        return self._client

    def open_in_background(self) -> None:
        """Start opening the store on a thread of its own. Milvus Lite's start-up is ~1 s, most of it waiting for
        its server process: a command loads its embedder meanwhile, and its first call waits for the rest. A
        failure is not lost: the first call opens again and raises it."""
        if self._client is None and self._opener is None:
            self._opener = threading.Thread(target=self._try_open, name="open-vectors", daemon=True)
            self._opener.start()

    def _try_open(self) -> None:
        try:
            _ = self.client
        except Exception:  # noqa: BLE001 - raised again, in the caller's thread, by its first call
            pass

    def _open_lite(self):
        path = Path(self.uri)
        path.parent.mkdir(parents=True, exist_ok=True)  # EXECUTOR_HOME is made private by the settings
        lock = self._lock
        assert lock is not None  # a Lite file's store always has one
        if not lock.held and not lock.try_acquire():
            raise BackendError(self._locked_message())
        try:
            if _lite_lock_taken(path):  # a process without our lock (e.g. a bare pymilvus) has the file
                raise BackendError(self._locked_message())
            damage = sqlite_damage(path)  # Milvus Lite keeps its data in SQLite, and loads a damaged file as empty
            if damage is not None:
                raise BackendError(self._damaged_message(damage))
            log = path.with_name(f"{path.name}.log")
            seen = log.stat().st_size if log.exists() else 0
            self._log_seen = (log, seen)
            _start_lite_when_listening(self._timeout)
            # the Lite server and the files it creates are private to their owner; its own log lines go
            # to a file beside it, not to the terminal
            with private_umask(), stderr_to(log, (1, 2)):  # the Lite server prints its failures on stdout
                try:
                    return self._connect(self.uri)
                except BackendError as exc:
                    raise BackendError(self._lite_start_error(exc, log, seen)) from exc.__cause__
        except BaseException:
            lock.release()
            raise

    def _damaged_message(self, why: str) -> str:
        return (
            f"cannot open the Milvus Lite file {self.uri}: it is damaged ({why}); move it away and run "
            "`executor ingest` again"
        )

    def _check_loaded(self, hits: list) -> list:
        """No hits from Lite: did its server fail to load the collection's data? It logs that and then answers
        every search with nothing, which must not read as "nothing found"."""
        if hits or not self.is_lite or self._log_seen is None:
            return hits
        log, seen = self._log_seen
        try:
            with open(log, "rb") as fh:
                fh.seek(seen)
                said = fh.read(1 << 20).decode("utf-8", "replace")
        except OSError:
            return hits
        if "Load data failed" in said or "malformed" in said:
            raise BackendError(self._damaged_message("its data cannot be loaded; see " + str(log)))
        return hits

    def _locked_message(self) -> str:
        return (
            f"cannot open the Milvus Lite file {self.uri}: another process has it open "
            "(a Lite file allows one process at a time); stop it, or set MILVUS_URI to a Milvus server"
        )

    def _connect(self, uri: str):
        from pymilvus import MilvusClient
        from pymilvus.exceptions import MilvusException

        # pymilvus logs every failed call with its traceback (per retry) before raising it: the error is ours
        # to say (its import configures this logger, so it is quietened after the import)
        logging.getLogger("pymilvus").setLevel(logging.CRITICAL)
        root = logging.getLogger()
        level = root.level
        # milvus-lite logs its own copy of an open error on the root logger; ours says what to do.
        root.setLevel(logging.CRITICAL)
        try:
            if not self.is_lite:
                self._check_reachable(uri)
            options = LITE_GRPC_OPTIONS if self.is_lite else {}  # a server's: pymilvus's own
            return MilvusClient(uri, token=self._token or "", timeout=self._timeout, grpc_options=options)
        except MilvusException as exc:
            raise BackendError(self._open_error(exc)) from exc
        finally:
            root.setLevel(level)

    def _check_reachable(self, uri: str) -> None:
        """A server that refuses the connection, or a name that does not resolve, is an error now: pymilvus
        waits out EXECUTOR_MILVUS_TIMEOUT_S (30 s) before it says anything."""
        import socket
        from urllib.parse import urlsplit

        if uri.startswith("unix:"):
            return
        parts = urlsplit(uri)
        host, port = parts.hostname or "localhost", parts.port or (443 if parts.scheme == "https" else 19530)
        try:
            socket.create_connection((host, port), timeout=min(3.0, self._timeout)).close()
        except TimeoutError:
            return  # slow, not refused: the client's own timeout decides
        except OSError as exc:
            why = "connection refused" if isinstance(exc, ConnectionRefusedError) else (exc.strerror or str(exc))
            raise BackendError(f"cannot reach Milvus at {display_url(uri)} (MILVUS_URI): {why}") from None

    def _open_error(self, exc) -> str:
        """What failed, from what actually failed: the wait for the server, or the server itself."""
        message = first_line(getattr(exc, "message", None) or exc)
        where = f"the Milvus Lite file {self.uri}" if self.is_lite else f"Milvus at {display_url(self.uri)}"
        if "time" in message.lower() and "out" in message.lower() or "fail connecting" in message.lower():
            return f"cannot open {where}: no answer within EXECUTOR_MILVUS_TIMEOUT_S={self._timeout:g} s" + (
                "" if self.is_lite else f" ({message})"
            )
        return f"cannot open {where}: {message}" if self.is_lite else f"cannot reach {where}: {message}"

    def _lite_start_error(self, exc: BackendError, log: Path, seen: int) -> str:
        """The Lite server's own account of why it did not start (its log since `seen`), as one line."""
        try:
            with open(log, "rb") as fh:
                fh.seek(seen)
                said = fh.read().decode("utf-8", "replace")
        except OSError:
            said = ""
        if NOT_LISTENING in said:
            return (
                f"cannot open the Milvus Lite file {self.uri}: its server did not listen within "
                f"EXECUTOR_MILVUS_TIMEOUT_S={self._timeout:g} s"
            )
        if "not a database" in said or "malformed" in said:
            return self._damaged_message("not a Milvus Lite file")
        if "Init milvus failed" in said or "Open local milvus failed" in str(exc):
            return f"cannot open the Milvus Lite file {self.uri}: milvus-lite did not start; see {log}"
        return str(exc)

    def _kw(self, read: bool = False) -> dict:
        # pymilvus retries failed calls 75 times with back-off by default: minutes
        # for a malformed request. Fail fast instead.
        kw: dict = {"retry_times": 2}
        # Lite's reads are bounded too (a stopped server held a lookup 90 s); its writes are not: a large batch
        # of an ingest on a loaded machine is slow, not hung, and only a command waits for it
        if read or not self.is_lite:
            kw["timeout"] = self._timeout
        return kw

    def close(self) -> None:
        if self._opener is not None:  # its stderr redirection ends before anything else is printed
            self._opener.join()
        if self._client is not None:
            self._client.close()
            self._client = None
        # our lock stays held: pymilvus keeps the Lite server of this file running until the process ends

    # -- collections --------------------------------------------------------
    # A full ingest (a KB's first, or a rebuild) fills a collection of its own, `kb_<kb>_G<n>`, and marks it complete
    # with an empty collection `kb_<kb>_G<n>_DONE` (creating a collection is atomic; Milvus Lite can neither rename
    # nor alias one). The KB's vectors are its newest complete generation, else `kb_<kb>` (where a first ingest wrote
    # them before it was staged too): one killed at any point leaves the old vectors answering, or none. Upper case:
    # no KB name has it (core.validation.KB_NAME).
    def collection_name(self, kb: str) -> str:
        if GENERATION in kb:  # a rebuild's own key (`staging`)
            return f"kb_{kb}"
        live = self._live.get(kb)
        if live is None:
            gens = self._generations(kb)
            done = [n for n, complete in gens.items() if complete]
            live = f"kb_{kb}{GENERATION}{max(done)}" if done else f"kb_{kb}"
            if self.is_lite:  # one process per Lite file: only this one changes it
                self._live[kb] = live
        return live

    def _collections_of(self, kb: str) -> list[str]:
        pattern = re.compile(rf"kb_{re.escape(kb)}(?:{GENERATION}\d+(?:{DONE})?)?")
        # pymilvus's calls are untyped: pyright infers a coroutine from their sync-or-async wrapper
        names = cast(list[str], self.client.list_collections(**self._kw(read=True)))
        return [n for n in names if pattern.fullmatch(n)]

    def _generations(self, kb: str) -> dict[int, bool]:
        """The KB's rebuild generations -> whether each is complete."""
        names = set(self._collections_of(kb))
        prefix = f"kb_{kb}{GENERATION}"
        return {
            int(n[len(prefix) :]): f"{n}{DONE}" in names for n in names if n.startswith(prefix) and not n.endswith(DONE)
        }

    def staging(self, kb: str) -> str:
        """A key to fill `kb` under (its first ingest, or a rebuild): a collection of its own (created, written and
        loaded like a KB's), which becomes the KB's vectors only when `promote` is called. What an interrupted one
        left is dropped."""
        self.discard_unfinished(kb)
        return f"{kb}{GENERATION}{max(self._generations(kb), default=0) + 1}"

    def promote(self, kb: str, staging: str) -> None:
        """The rebuild under `staging` is complete: it becomes the KB's vectors, and the old ones are dropped."""
        new = self.collection_name(staging)
        with self._writing(kb):  # a full disk fails here too (Lite's "internal error" as it builds the index)
            self.client.create_collection(new + DONE, dimension=2, **self._kw())  # the one step that switches
        self._live[kb] = new
        self._recorded.pop(kb, None)
        self._lexical.pop(kb, None)
        for name in self._collections_of(kb):
            if name not in (new, new + DONE):
                self.client.drop_collection(name, **self._kw())
        if not self.is_lite:
            self._live.pop(kb, None)

    def written_version(self, kb: str) -> str | None:
        return vector_versions.written(self.uri, kb) if self.is_lite else None

    def note_version(self, kb: str, version: str | None) -> None:
        if self.is_lite:
            vector_versions.note(self.uri, kb, version)

    def discard_unfinished(self, kb: str) -> None:
        """Drop what a first ingest or a rebuild killed half-way left behind (it never became the KB's vectors)."""
        for n, complete in self._generations(kb).items():
            if not complete:
                self.client.drop_collection(f"kb_{kb}{GENERATION}{n}", **self._kw())

    def has(self, kb: str) -> bool:
        return self._read(kb, lambda: self._has(kb))

    def _has(self, kb: str) -> bool:
        return bool(self.client.has_collection(self.collection_name(kb), **self._kw(read=True)))

    def recorded_embedder(self, kb: str) -> dict | None:
        if kb in self._recorded:
            return self._recorded[kb]
        desc = self._read(kb, lambda: self._description(kb))
        if desc is None:
            return None
        meta = (
            json.loads(desc[len(DESCRIPTION_PREFIX) :])
            if desc.startswith(DESCRIPTION_PREFIX)
            else {"embedder": "unknown", "dim": None}
        )
        if self.is_lite:
            self._recorded[kb] = meta
        return meta

    def _description(self, kb: str) -> str | None:
        """The KB's collection's description (where its embedder is recorded), None when it has none."""
        if not self._has(kb):
            return None
        described = self.client.describe_collection(self.collection_name(kb), **self._kw(read=True))
        return cast(dict, described).get("description", "")

    def check_embedder(self, kb: str, embedder: Embedder, source: str | None = None) -> None:
        meta = self.recorded_embedder(kb)
        if meta is None:
            raise BackendError(f"knowledge base {kb!r} has no vectors: {ingest_hint(kb, source)}")
        if meta.get("embedder") != embedder.name or meta.get("dim") != embedder.dim:
            raise BackendError(
                f"knowledge base {kb!r} was embedded with {meta.get('embedder')} ({meta.get('dim')}-d) "
                f"but the active embedder is {embedder.name} ({embedder.dim}-d): switch EXECUTOR_EMBEDDER "
                f"back, or re-ingest with --rebuild"
            )

    def server_version(self) -> tuple[int, int] | None:
        if self.is_lite:
            return None  # Lite 2.5.1: sparse vectors and BM25 included
        try:
            return server_version(str(self.client.get_server_version(**self._kw())))
        except Exception:  # an old server without the call, or a proxy in front: try the full schema
            return None

    def has_lexical(self, kb: str) -> bool:
        """Whether the KB's collection has the sparse half of hybrid search (dense-only on an old server)."""
        if kb not in self._lexical:
            meta = self.recorded_embedder(kb) or {}
            self._lexical[kb] = meta.get("lexical", True)
        return self._lexical[kb]

    def create(self, kb: str, embedder: Embedder) -> str | None:
        """Create the KB's collection; returns a warning when the server is too old for the lexical half."""
        from pymilvus import DataType, Function, FunctionType
        from pymilvus.exceptions import MilvusException

        bm25 = not embedder.has_lexical_weights
        version = self.server_version()
        lexical = lexical_support(version, needs_bm25=bm25)
        schema = self.client.create_schema(
            auto_id=False,
            description=DESCRIPTION_PREFIX
            + json.dumps({"embedder": embedder.name, "dim": embedder.dim, "lexical": lexical}),
        )
        schema.add_field("chunk_id", DataType.VARCHAR, is_primary=True, max_length=1024)
        schema.add_field("doc_key", DataType.VARCHAR, max_length=1024)
        schema.add_field("chunk_index", DataType.INT64)
        schema.add_field("domain", DataType.VARCHAR, max_length=128)
        schema.add_field("title", DataType.VARCHAR, max_length=2048)
        schema.add_field("keywords", DataType.VARCHAR, max_length=4096)
        text_opts = {"enable_analyzer": True, "analyzer_params": {"tokenizer": "jieba"}} if bm25 and lexical else {}
        schema.add_field("text", DataType.VARCHAR, max_length=TEXT_MAX, **text_opts)
        schema.add_field("dense", DataType.FLOAT_VECTOR, dim=embedder.dim)
        if lexical:
            schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        if bm25 and lexical:
            schema.add_function(
                Function(
                    name="text_bm25",
                    function_type=FunctionType.BM25,
                    input_field_names=["text"],
                    output_field_names=["sparse"],
                )
            )
        index = self.client.prepare_index_params()
        index.add_index("dense", index_type=self.dense_index, metric_type="L2")
        if lexical:
            index.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25" if bm25 else "IP")
        try:
            self.client.create_collection(self.collection_name(kb), schema=schema, index_params=index, **self._kw())
        except MilvusException as exc:
            raise BackendError(f"Milvus at {self.uri} cannot create the collection for {kb!r}: {exc.message}") from exc
        self._lexical[kb] = lexical
        self._recorded.pop(kb, None)
        if lexical:
            return None
        found = ".".join(map(str, version)) if version else "unknown"
        need = ".".join(map(str, BM25_SINCE if bm25 else SPARSE_SINCE))
        return (
            f"Milvus server {found} has no {'BM25 function' if bm25 else 'sparse vectors'} (needs {need}+): "
            f"knowledge base {kb!r} is searched by dense vectors only (no keyword half in hybrid search)"
        )

    def drop(self, kb: str) -> None:
        """The KB's vectors, every generation of them."""
        self._lexical.pop(kb, None)
        self._recorded.pop(kb, None)
        self._live.pop(kb, None)
        if GENERATION not in kb:
            self.note_version(kb, None)
        names = [self.collection_name(kb)] if GENERATION in kb else self._collections_of(kb)
        for name in names:
            if self.client.has_collection(name):
                self.client.drop_collection(name)

    # -- writes -------------------------------------------------------------
    def delete_docs(self, kb: str, doc_keys: list[str], keep: set[str] | None = None) -> None:
        keep = keep or set()
        for i in range(0, len(doc_keys), 200):
            batch = doc_keys[i : i + 200]
            expr = f"doc_key in [{', '.join(_literal(k) for k in batch)}]"
            in_batch = set(batch)
            kept = sorted(c for c in keep if c.rpartition("#")[0] in in_batch)
            if kept:  # the chunks just rewritten stay: only what the new text no longer has goes
                expr += f" and chunk_id not in [{', '.join(_literal(c) for c in kept)}]"
            with self._writing(kb):
                self.client.delete(self.collection_name(kb), filter=expr, **self._kw())

    def upsert(self, kb: str, rows: list[dict], embedder: Embedder, vectors: np.ndarray) -> None:
        lexical = embedder.lexical_weights([r["text"] for r in rows]) if embedder.has_lexical_weights else None
        data = []
        # a document's keywords once, not once per chunk: a page's headings are its keywords, and 5,000 of them
        # serialized for each of its chunks grew with the square of its headings
        keywords: dict[str, str] = {}
        for i, row in enumerate(rows):
            if row["doc_key"] not in keywords:
                words = json.dumps(row.get("keywords", []), ensure_ascii=False)
                keywords[row["doc_key"]] = _truncate_utf8(words, 4000)
            item = {
                "chunk_id": row["chunk_id"],
                "doc_key": row["doc_key"],
                "chunk_index": int(row["chunk_index"]),
                "domain": row["domain"],
                "title": _truncate_utf8(row["title"], 2000),
                "keywords": keywords[row["doc_key"]],
                "text": _truncate_utf8(row["text"], TEXT_MAX - 16),
                "dense": vectors[i].astype(np.float32).tolist(),
            }
            if lexical is not None and self.has_lexical(kb):
                item["sparse"] = lexical[i] or {0: 0.0}
            data.append(item)
        with self._writing(kb):
            for i in range(0, len(data), 500):
                self.client.upsert(self.collection_name(kb), data[i : i + 500], **self._kw())

    def flush_and_load(self, kb: str) -> None:
        name = self.collection_name(kb)
        with self._writing(kb):
            self.client.flush(name, **self._kw())
            self.client.load_collection(name, **self._kw())

    @contextmanager
    def _writing(self, kb: str):
        """A failed write as one line that says why when it can tell: a full disk above all (Lite answers it with
        "Unexpected error in RPC handling", and pymilvus logs a traceback per retry)."""
        from pymilvus.exceptions import MilvusException

        try:
            yield
        except MilvusException as exc:
            self._refuse_if_disk_full(exc, "write", "free some space and run `executor ingest` again")
            raise BackendError(
                f"cannot write knowledge base {kb!r} to {self._where()}: "
                f"{first_line(getattr(exc, 'message', None) or exc)}"
            ) from exc

    def _read(self, kb: str, call: Callable[[], T]) -> T:
        """One read, failing as `_reading` says. A Lite server that died under a long-lived process (`executor
        mcp`, `langgraph dev`, chat: killed, out of memory) is started again and the read made once more; it
        failed every later lookup until the process was restarted."""
        opened = self._client
        try:
            return self._when_ready(call)
        except Exception as exc:
            failure = self._read_failure(kb, exc)
            if failure is None:
                raise
            if not self._restarted(opened, exc):
                raise failure from exc
        with self._reading(kb):
            return self._when_ready(call)

    def _when_ready(self, call: Callable[[], T]) -> T:
        """`call`, made again while a Lite server just started answers that its memory-mapping is not set up yet
        (`LITE_NOT_READY`; seen under load, between its first answer and its first read): that is no damage, and
        read as one it told the user to move the file away. Bounded by the store's timeout."""
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                return call()
            except Exception as exc:
                if not (self.is_lite and LITE_NOT_READY in str(exc)) or time.monotonic() > deadline:
                    raise
            time.sleep(LITE_READY_POLL_S)

    @contextmanager
    def _reading(self, kb: str):
        """A failed read as one line naming the store (`_read_failure`), never a raw MilvusException or gRPC error."""
        try:
            yield
        except Exception as exc:
            failure = self._read_failure(kb, exc)
            if failure is None:
                raise
            raise failure from exc

    def _read_failure(self, kb: str, exc: Exception) -> BackendError | None:
        """What a failed read says: damaged data in a Lite file (its server cannot parse a record), a full disk, no
        answer in time (pymilvus raises gRPC's own DEADLINE_EXCEEDED as it came), or whatever the server said.
        None for an error that is not the store's."""
        import grpc
        from pymilvus.exceptions import MilvusException

        if isinstance(exc, grpc.RpcError):
            status = _status(exc)
            said = (
                f"no answer within EXECUTOR_MILVUS_TIMEOUT_S={self._timeout:g} s"
                if status == grpc.StatusCode.DEADLINE_EXCEEDED
                else first_line(f"{getattr(status, 'name', status)}: {getattr(exc, 'details', lambda: exc)()}")
            )
            return BackendError(f"cannot read knowledge base {kb!r} from {self._where()}: {said}")
        if not isinstance(exc, MilvusException):
            return None
        said = first_line(getattr(exc, "message", None) or exc)
        self._refuse_if_disk_full(exc, "read", "free some space")
        if self.is_lite and LITE_NOT_READY in said:
            return BackendError(
                f"cannot read knowledge base {kb!r} from {self._where()}: its server was not ready within "
                f"EXECUTOR_MILVUS_TIMEOUT_S={self._timeout:g} s"
            )
        damaged = ("failed to parse", "Assert", "malformed", "Load data failed")
        if self.is_lite and any(sign in said for sign in damaged):
            return BackendError(self._damaged_message(f"its records cannot be read: {said[:120]}"))
        return BackendError(f"cannot read knowledge base {kb!r} from {self._where()}: {said}")

    def _restarted(self, opened, exc: Exception) -> bool:
        """Whether the Lite server `opened` (the client a read failed on) talked to has exited and a new one now
        answers. The dead one is released from milvus-lite's registry (which would hand its socket out again), and
        the store opened as at first: that returns once the new server has answered pymilvus's first calls."""
        from milvus_lite.server_manager import server_manager_instance

        if not self.is_lite or opened is None:
            return False
        with self._opening:
            if self._client is not opened:  # another thread started it again meanwhile
                return self._client is not None
            process = self._lite_process()
            if process is None:
                return False
            if process.poll() is None:
                if not _connection_lost(exc):
                    return False  # it answered, or hangs (a timeout): it is not replaced
                try:
                    process.wait(LITE_EXIT_S)
                except subprocess.TimeoutExpired:
                    return False
            self._client = None
            opened.close()
            server_manager_instance.release_server(self.uri)
            if not Path(self.uri).exists():
                # deleted under the running server: a new one would make a new, empty file, and the read say
                # "collection not found"
                raise BackendError(
                    f"the Milvus Lite file {self.uri} is gone (deleted while in use); run `executor ingest` again"
                )
            try:
                self._client = self._open_lite()
            except OSError as exc:  # its log cannot be written (a folder in its place, a read-only home)
                raise BackendError(f"cannot start the Milvus Lite server for {self.uri} again: {exc}") from exc
            return True

    def _lite_process(self) -> subprocess.Popen | None:
        """This process's Lite server for the file (milvus-lite 2.5.1 keeps it in its registry, by resolved path)."""
        from milvus_lite.server_manager import server_manager_instance

        server = server_manager_instance._servers.get(str(Path(self.uri).absolute().resolve()))
        return getattr(server, "_p", None)

    def _where(self) -> str:
        return f"the Milvus Lite file {self.uri}" if self.is_lite else f"Milvus at {display_url(self.uri)}"

    def _refuse_if_disk_full(self, exc: Exception, verb: str, then: str) -> None:
        """A Lite file's failure on a full disk said as such: the server's own message names neither. So is a Lite
        server the file-size limit (`ulimit -f`) stopped: SIGXFSZ ends it at the limit, and pymilvus said only "Fail
        connecting to server ..., illegal connection params or server unavailable" (hostile19 finding 8)."""
        process = self._lite_process() if self.is_lite else None
        status = process.poll() if process is not None else None
        if process is not None and status is None:
            # pymilvus can give up on the socket before the dying server is reaped (a loaded machine): wait for it
            with suppress(subprocess.TimeoutExpired):
                status = process.wait(timeout=2)
        if status == -signal.SIGXFSZ:
            limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
            size = "" if limit == resource.RLIM_INFINITY else f" of {limit // 1024:,} kB"
            raise BackendError(
                f"cannot {verb} {self._where()}: the file-size limit{size} (ulimit -f) stopped its server; raise it "
                "(`ulimit -f unlimited`) and run the command again"
            ) from exc
        if self.is_lite:
            free = shutil.disk_usage(Path(self.uri).parent).free
            if free < DISK_FULL_BYTES:
                raise BackendError(
                    f"cannot {verb} {self._where()}: the disk is full ({free // 1024} kB free); {then}"
                ) from exc

    def count(self, kb: str) -> int:
        rows = self._read(
            kb,
            lambda: self.client.query(
                self.collection_name(kb), filter="", output_fields=["count(*)"], **self._kw(read=True)
            ),
        )
        return int(rows[0]["count(*)"])

    # -- reads --------------------------------------------------------------
    def search(self, kb: str, query: str, vector: np.ndarray, embedder: Embedder, limit: int) -> list[ChunkHit]:
        """Hybrid dense + sparse search (RRF); every hit carries its dense squared-L2 distance.
        A collection made dense-only (an old server) is searched by its dense vectors."""
        if not self.has_lexical(kb):
            return self.dense_search(kb, vector, limit)
        return self._read(kb, lambda: self._hybrid_search(kb, query, vector, embedder, limit))

    def _hybrid_search(self, kb: str, query: str, vector: np.ndarray, embedder: Embedder, limit: int):
        from pymilvus import AnnSearchRequest, RRFRanker

        name = self.collection_name(kb)
        dense = AnnSearchRequest([vector.tolist()], "dense", {"metric_type": "L2"}, limit)
        if embedder.has_lexical_weights:
            sparse_query = embedder.lexical_weights([query])[0] or {0: 0.0}
            sparse = AnnSearchRequest([sparse_query], "sparse", {"metric_type": "IP"}, limit)
        else:
            sparse = AnnSearchRequest([query], "sparse", {"metric_type": "BM25"}, limit)
        result = self.client.hybrid_search(
            name, [dense, sparse], RRFRanker(60), limit=limit, output_fields=OUTPUT_FIELDS, **self._kw(read=True)
        )
        return self._check_loaded([self._hit(h["entity"], vector, rank) for rank, h in enumerate(result[0])])

    def lexical_search(
        self, kb: str, query: str, vector: np.ndarray, embedder: Embedder, limit: int
    ) -> list[tuple[ChunkHit, float]]:
        """The lexical layer alone (BM25, or bge-m3's lexical weights) with its raw scores, which
        hybrid search's RRF would replace by ranks; each hit still carries its dense distance."""
        return self.lexical_search_many(kb, [query], [vector], embedder, limit)[0]

    def lexical_search_many(
        self, kb: str, queries: list[str], vectors: list[np.ndarray], embedder: Embedder, limit: int
    ) -> list[list[tuple[ChunkHit, float]]]:
        """`lexical_search` for many queries in one request (self-calibration grades hundreds at ingest)."""
        if not queries or not self.has_lexical(kb):  # a dense-only collection (an old server): no lexical layer
            return [[] for _ in queries]
        if embedder.has_lexical_weights:
            data, metric = [w or {0: 0.0} for w in embedder.lexical_weights(queries)], "IP"
        else:
            data, metric = list(queries), "BM25"
        result = self._read(
            kb,
            lambda: self.client.search(
                self.collection_name(kb),
                data=data,
                anns_field="sparse",
                limit=limit,
                output_fields=OUTPUT_FIELDS,
                search_params={"metric_type": metric},
                **self._kw(read=True),
            ),
        )
        return [
            [(self._hit(h["entity"], v, rank), float(h["distance"])) for rank, h in enumerate(hits)]
            for v, hits in zip(vectors, result, strict=True)
        ]

    def texts(self, kb: str, batch_size: int = 1000):
        """Every chunk's (chunk_id, doc_key, title, text), in batches, for statistics over the whole KB."""
        import logging

        # Lite has no MVCC timestamp to give; pymilvus warns and reads with the client's clock, which is fine here
        logging.getLogger("pymilvus.orm.iterator").setLevel(logging.ERROR)
        with self._reading(kb):
            # opened as every read is (`_read`): a Lite server that died is started again here too
            iterator = self._read(
                kb,
                lambda: self.client.query_iterator(
                    self.collection_name(kb),
                    batch_size=batch_size,
                    output_fields=["chunk_id", "doc_key", "title", "text"],
                    **self._kw(read=True),
                ),
            )
            try:
                while batch := iterator.next():
                    for row in batch:
                        yield row["chunk_id"], row["doc_key"], row["title"], row["text"]
            finally:
                iterator.close()

    def dense_search(self, kb: str, vector: np.ndarray, limit: int) -> list[ChunkHit]:
        return self.dense_search_many(kb, [vector], limit)[0]

    def dense_search_many(self, kb: str, vectors: list[np.ndarray], limit: int) -> list[list[ChunkHit]]:
        """`dense_search` for many vectors in one request."""
        if not vectors:
            return []
        result = self._read(
            kb,
            lambda: self.client.search(
                self.collection_name(kb),
                data=[v.tolist() for v in vectors],
                anns_field="dense",
                limit=limit,
                output_fields=OUTPUT_FIELDS,
                search_params={"metric_type": "L2"},
                **self._kw(read=True),
            ),
        )
        return [
            self._check_loaded([self._hit(h["entity"], v, rank) for rank, h in enumerate(hits)])
            for v, hits in zip(vectors, result, strict=True)
        ]

    def document_text(self, kb: str, doc_key: str) -> str:
        """A document's chunks in order, joined (for quoting a sentence the chunk sent did not hold)."""
        rows = self._read(
            kb,
            lambda: self.client.query(
                self.collection_name(kb),
                filter=f"doc_key == {_literal(doc_key)}",
                output_fields=["chunk_index", "text"],
                **self._kw(read=True),
            ),
        )
        return "\n\n".join(r["text"] for r in sorted(rows, key=lambda r: r["chunk_index"]))

    def get_chunks(self, kb: str, chunk_ids: list[str], vector: np.ndarray) -> list[ChunkHit]:
        if not chunk_ids:
            return []
        rows = self._read(
            kb,
            lambda: self.client.get(
                self.collection_name(kb), ids=chunk_ids, output_fields=OUTPUT_FIELDS, **self._kw(read=True)
            ),
        )
        return [self._hit(r, vector, -1) for r in rows]

    @staticmethod
    def _hit(entity: dict, query: np.ndarray, rank: int) -> ChunkHit:
        diff = np.asarray(entity["dense"], dtype=np.float32) - query
        return ChunkHit(
            chunk_id=entity["chunk_id"],
            doc_key=entity["doc_key"],
            chunk_index=int(entity["chunk_index"]),
            domain=entity["domain"],
            title=entity["title"],
            text=entity["text"],
            distance=float(diff @ diff),
            rank=rank,
        )


def _status(exc: Exception):
    """A gRPC error's status code (grpc.RpcError declares none; those pymilvus raises are calls, which have one)."""
    code = getattr(exc, "code", None)
    return code() if callable(code) else None


# what a Lite server that has just started says to a read it is not ready for (milvus-lite 2.5.1)
LITE_NOT_READY = "Mmap manager has not been init"
LITE_READY_POLL_S = 0.1


def _connection_lost(exc: Exception) -> bool:
    """A read that failed for want of a connection to the server (as a dead one fails), not for what it answered."""
    import grpc

    if _status(exc) == grpc.StatusCode.UNAVAILABLE:
        return True
    said = str(getattr(exc, "message", None) or exc)
    return "Fail connecting" in said or "UNAVAILABLE" in said


def _lite_lock_taken(path: Path) -> bool:
    """Whether a live process holds milvus-lite's own lock on `path` (a POSIX lock, as milvus-lite takes it).
    Probing with lockf and letting go at once: closing the descriptor drops this process's POSIX locks."""
    from milvus_lite.server_manager import server_manager_instance

    if str(path.absolute().resolve()) in server_manager_instance._servers:
        return False  # this process runs it (another runtime here); probing would drop its lock
    lock = path.with_name(f".{path.name}.lock")
    if not lock.exists():
        return False
    with open(lock, "a") as fh:
        try:
            fcntl.lockf(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.lockf(fh, fcntl.LOCK_UN)
    return False
