"""Conversions (PDF, Office, HTML) in a worker process of their own, each bounded in time and memory.

A converter is a third-party parser on a file anyone may have written: an XLSX with a 120 MB sheet ran for
over 300 s and took 2 GB in the ingest's own process. Here one worker (started on the first conversion, with
`spawn`: the ingest's process holds the embedder's threads) converts one file at a time under RLIMIT_DATA; a
file that takes longer than its time is a warning and the worker is replaced, as is one that ran out of memory.
The worker ends with the ingest, however the ingest ends.
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from executor.retrieval.converters import ConversionError, Converted, convert

START_TIMEOUT_S = 120  # the worker's start and its imports (~3 s; minutes on a machine under load)


def _start_worker(max_bytes: int) -> None:
    threading.Thread(target=_end_with_parent, name="end-with-parent", daemon=True).start()
    resource.setrlimit(resource.RLIMIT_DATA, (max_bytes, max_bytes))
    # what goes wrong comes back as the conversion's exception; a worker that runs out of memory would
    # print its tracebacks over the ingest's output
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)


def _end_with_parent() -> None:
    """Exit once the ingest has. An ingest killed with SIGKILL (the OOM killer, `docker stop` or `timeout -k` after
    their grace time) left its worker an orphan converting at full CPU, then blocked for ever writing its result to
    a pipe nobody reads (hostile22 #5). multiprocessing's parent sentinel is a pipe whose other end the ingest
    alone holds: it reads as closed the moment the ingest is gone, however it went (unlike `PR_SET_PDEATHSIG`,
    Linux's, which fires when the thread that started the worker ends)."""
    parent = multiprocessing.parent_process()
    if parent is not None:  # (None only in the ingest itself, which never runs this)
        parent.join()
        os._exit(1)


def _ready() -> None:
    """Import the converters, so that a file's time bound is its conversion's alone."""
    import markitdown.converters  # noqa: F401


class BoundedConverter:
    def __init__(self, timeout_s: float, max_memory_bytes: int):
        self.timeout_s = timeout_s
        self.max_memory_bytes = max_memory_bytes
        self._pool: ProcessPoolExecutor | None = None

    def convert(self, path: Path, fmt: str, data: bytes, max_unzipped_bytes: int) -> Converted:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_start_worker,
                initargs=(self.max_memory_bytes,),
            )
            self._pool.submit(_ready).result(timeout=START_TIMEOUT_S)
        future = self._pool.submit(convert, path, fmt, data, max_unzipped_bytes)
        try:
            return future.result(timeout=self.timeout_s)
        except ConversionError as exc:
            if "MemoryError" not in str(exc):  # a parser that ran out of memory says so as a conversion failure
                raise
            self.close(kill=True)
            raise ConversionError(self._memory_message()) from None
        except FuturesTimeout:
            self.close(kill=True)
            raise ConversionError(
                f"conversion took longer than {self.timeout_s:g} s (EXECUTOR_CONVERT_TIMEOUT_S); skipped"
            ) from None
        except (MemoryError, BrokenProcessPool):
            self.close(kill=True)
            raise ConversionError(self._memory_message()) from None

    def _memory_message(self) -> str:
        return (
            f"conversion needed more than {self.max_memory_bytes // 1_000_000:,} MB (EXECUTOR_CONVERT_MEMORY_MB); "
            "skipped"
        )

    def close(self, kill: bool = False) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if kill:  # a conversion still running: it is not waited for
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                process.kill()
        pool.shutdown(wait=not kill, cancel_futures=True)
