"""Running the endpoint: in the foreground (`executor llm serve`) or in a thread of this process for as
long as a command runs (EXECUTOR_LOCAL_MODEL)."""

from __future__ import annotations

import logging
import signal
import socket
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path

import uvicorn

from executor.core.bounded_yaml import file_kind
from executor.core.errors import ConfigError, ExecutorError
from executor.core.local_http import LocalGuard, own_hosts, server_config
from executor.local_llm.app import ChatService, create_app
from executor.local_llm.engine import EngineOptions, LlamaEngine
from executor.local_llm.model_file import BUNDLED, resolve_model

START_TIMEOUT_S = 60


def _bind(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        raise ExecutorError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}") from None
    return sock


class _Server(uvicorn.Server):
    """uvicorn's server, whose Ctrl-C (or SIGTERM) in `llm serve` also cancels the requests being answered: its
    graceful shutdown waits for them, and `llm serve` went on generating to the end of the round (over 2 minutes
    for a 2,000-token reply here) before it stopped."""

    def __init__(self, config: uvicorn.Config, service: ChatService):
        super().__init__(config)
        self.service = service

    def handle_exit(self, sig, frame) -> None:
        self.service.abort()
        super().handle_exit(sig, frame)


def _server(options: EngineOptions, port: int) -> tuple[uvicorn.Server, ChatService]:
    service = ChatService(LlamaEngine(options))
    # the Host and Origin a local page could forge (DNS rebinding, cross-site POSTs) and the body's size are
    # checked before the app reads anything (executor/core/local_http.py)
    app = LocalGuard(create_app(service), own_hosts("127.0.0.1", port))
    config = server_config(app, log_level="warning", access_log=False, lifespan="on")
    return _Server(config, service), service


class LocalEndpoint:
    """The endpoint on a free loopback port in a background thread; `base_url` is what ChatOpenAI takes."""

    def __init__(self, options: EngineOptions, port: int = 0):
        self.options = options
        self._sock = _bind(port)
        self.port = self._sock.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._server, self.service = _server(options, self.port)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, name="local-llm", daemon=True
        )
        self._handlers: tuple[Callable, Callable] | None = None  # (ours, the one it stands in front of)

    def start(self) -> LocalEndpoint:
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ExecutorError(f"the local model endpoint did not start on 127.0.0.1:{self.port}")
            time.sleep(0.02)
        self._cancel_on_interrupt()
        return self

    def _cancel_on_interrupt(self) -> None:
        """Ctrl-C cancels the requests being answered, then does what it did (KeyboardInterrupt). The command's
        thread waits for the model's reply inside LangGraph, whose executor lets the node's thread finish before
        KeyboardInterrupt gets out of the graph: without this, llama.cpp's round ran to its end first, minutes with
        a 7B model. Only the main thread may set a handler; Ctrl-C ignored (SIG_IGN) is left ignored."""
        previous = signal.getsignal(signal.SIGINT)
        if threading.current_thread() is not threading.main_thread() or not callable(previous):
            return

        def interrupted(signum, frame) -> None:
            self.service.abort()
            previous(signum, frame)

        signal.signal(signal.SIGINT, interrupted)
        self._handlers = (interrupted, previous)

    def _restore_interrupt(self) -> None:
        if self._handlers is None or threading.current_thread() is not threading.main_thread():
            return
        ours, previous = self._handlers
        if signal.getsignal(signal.SIGINT) is ours:  # not one a later caller put in front of it
            signal.signal(signal.SIGINT, previous)
        self._handlers = None

    def stop(self) -> None:
        self._restore_interrupt()
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()

    def __enter__(self) -> LocalEndpoint:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def serve_forever(options: EngineOptions, port: int, announce: Callable[[], None]) -> None:
    """Serve until Ctrl-C (uvicorn handles the signal and shuts down cleanly); one line per request on
    stderr with its tokens and speed. `announce` says where, once the server has started (the port is ours and
    the model loaded): a port in use or a model file llama.cpp cannot load is the one error line, after no
    "serving" line (nor, under --json, an object a script takes for the endpoint)."""
    sock = _bind(port)
    logging.basicConfig(format="%(asctime)s %(message)s")
    logging.getLogger("local_llm").setLevel(logging.INFO)
    server, _ = _server(options, sock.getsockname()[1])

    def announce_when_started() -> None:
        while not server.started and not server.should_exit:
            time.sleep(0.05)
        if server.started:
            announce()

    # uvicorn runs here, in the main thread, where it handles Ctrl-C; the line waits for it in a thread of its own
    threading.Thread(target=announce_when_started, name="announce", daemon=True).start()
    server.run(sockets=[sock])


def _regular_or_missing(model: str | Path | None) -> None:
    """`--model` (or EXECUTOR_LOCAL_MODEL) naming a named pipe, a socket or a device said "model file not found":
    it is there, and is no file; what it is is said (a folder is resolve_model's own error)."""
    if model is None or str(model) == BUNDLED:
        return
    path = Path(model).expanduser()
    try:
        mode = path.stat().st_mode
    except OSError:
        return  # not there, or not reachable: resolve_model says so
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise ConfigError(f"{path} is {file_kind(mode)}, not a .gguf file")


def engine_options(settings, model: str | Path | None) -> EngineOptions:
    """The engine's options from the settings object, for a model path, "bundled" or None (bundled)."""
    _regular_or_missing(model)
    path = resolve_model(model)
    return EngineOptions(
        model=path,
        alias=path.stem,
        n_ctx=settings.local_model_ctx,
        threads=settings.local_model_threads,
        timeout_s=settings.local_model_timeout_s,
        max_tokens=settings.local_model_max_tokens,
    )
