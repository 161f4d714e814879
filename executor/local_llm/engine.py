"""llama.cpp's own server, in-process through xllamacpp, on a private loopback port.

Only this module imports xllamacpp. The Starlette app in front of it talks to
its HTTP API (`/completion` with `json_schema`, `/tokenize`).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import signal
import socket
import threading
from dataclasses import dataclass
from pathlib import Path

import httpx

from executor.core.errors import ExecutorError

STOP = ["<|im_end|>", "<|endoftext|>"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class EngineOptions:
    model: Path
    alias: str
    n_ctx: int = 4096
    threads: int = 2
    timeout_s: float = 300.0
    max_tokens: int = 256  # a reply's length when the request does not say: the answer node does not
    seed: int = 0


class EngineError(Exception):
    """llama-server refused or failed a request: `status` and one line for the client."""

    def __init__(self, status: int, message: str):
        super().__init__(" ".join(message.split()))
        self.status = status


class LlamaEngine:
    def __init__(self, options: EngineOptions):
        # a KeyboardInterrupt raised while llama.cpp loads the model and starts its threads (Ctrl-C in that half
        # second) hung the process for good, 3 times in 4, in the library's constructor or its destructor: while
        # it starts, Ctrl-C is only noted, and raised once the start is over
        if threading.current_thread() is not threading.main_thread():  # only the main thread gets signals
            self._start(options)
            return
        came: list[int] = []
        previous = signal.signal(signal.SIGINT, lambda signum, _frame: came.append(signum))
        try:
            self._start(options)
        finally:
            signal.signal(signal.SIGINT, previous)
        if came:
            raise KeyboardInterrupt

    def _start(self, options: EngineOptions) -> None:
        try:
            import xllamacpp
        except ImportError:
            raise ExecutorError('the local model needs the local-llm extra: pip install -e ".[local-llm]"') from None
        self.options = options
        # a compiled module without type stubs: pyright cannot see its classes
        params = xllamacpp.CommonParams()  # pyright: ignore[reportAttributeAccessIssue]
        params.model.path = str(options.model)
        params.model_alias = {options.alias}
        params.hostnames = ["127.0.0.1"]
        params.port = free_port()
        # llama-server has no Host or Origin check: its port is for this process alone, which holds the key
        key = secrets.token_urlsafe(32)
        params.api_keys = [key]
        params.n_ctx = options.n_ctx
        params.n_parallel = 1  # one slot: requests queue, and its prompt cache serves the next round of a turn
        # llama.cpp sees a request cancelled only between two batches of the prompt: 2,048 tokens by default, 10-20 s
        # with the bundled model here, minutes with a 7B one. A batch of one ubatch costs nothing more: llama.cpp
        # evaluates a batch one ubatch at a time anyway
        params.n_batch = params.n_ubatch
        params.cpuparams.n_threads = options.threads
        params.cpuparams_batch.n_threads = options.threads
        params.sampling.seed = options.seed
        params.verbosity = -1
        try:
            self._server = xllamacpp.Server(params)  # pyright: ignore[reportAttributeAccessIssue]
        except Exception as exc:  # the library's own message says which file or parameter it could not use
            raise ExecutorError(f"could not start llama.cpp on {options.model}: {exc}".splitlines()[0]) from exc
        self.base_url = f"http://127.0.0.1:{params.port}"
        self._headers = {"Authorization": f"Bearer {key}"}
        self._client = httpx.AsyncClient(base_url=self.base_url, timeout=options.timeout_s, headers=self._headers)
        self._abandoned = False  # a completion was cancelled and llama.cpp may still be evaluating it
        self._vocabulary_size: int | None = None  # read on first use

    async def vocabulary_size(self) -> int:
        """How many tokens the model has: llama.cpp skips a logit_bias of a token id past them without a word."""
        if self._vocabulary_size is None:
            models = await self._call("/v1/models")
            self._vocabulary_size = int(models["data"][0]["meta"]["n_vocab"])
        return self._vocabulary_size

    async def tokenize(self, text: str) -> list[int]:
        """The model's token ids for `text`: what a client's logit_bias names."""
        return (await self._call("/tokenize", {"content": text}))["tokens"]

    async def count_tokens(self, text: str) -> int:
        return len(await self.tokenize(text))

    async def complete(
        self,
        prompt: str,
        schema: dict | None,
        n_predict: int,
        temperature: float,
        seed: int | None,
        stops: list[str] | None = None,
        sampling: dict | None = None,
    ) -> dict:
        """llama.cpp's completion of `prompt`; `stops`: the client's stop sequences, besides the turn's end;
        `sampling`: OpenAI's sampling options the client set (`ChatRequest.sampling`), which llama.cpp takes by the
        same names, `logit_bias` as [token id, bias] pairs."""
        body = {
            "prompt": prompt,
            "n_predict": n_predict,
            "temperature": temperature,
            "seed": self.options.seed if seed is None else seed,
            "stop": STOP + list(stops or []),
            "cache_prompt": True,
            **(sampling or {}),
        }
        if "logit_bias" in body:
            body["logit_bias"] = [[token, bias] for token, bias in body["logit_bias"].items()]
        if schema is not None:
            body["json_schema"] = schema
        try:
            out = await self._call("/completion", body)
        except asyncio.CancelledError:  # llama.cpp stops it at its next batch, and answers the next request after
            self._abandoned = True
            raise
        self._abandoned = False  # one slot: llama.cpp has finished whatever came before this one
        return out

    async def _call(self, path: str, body: dict | None = None) -> dict:
        """llama.cpp's answer to a POST of `body` to `path`, or to a GET of `path` when there is none."""
        try:
            if body is None:
                response = await self._client.get(path)
            else:
                response = await self._client.post(path, json=body)
        except httpx.TimeoutException:
            raise EngineError(504, f"the model did not answer within {self.options.timeout_s:g} s") from None
        except httpx.HTTPError as exc:
            raise EngineError(502, f"llama.cpp server unreachable: {exc.__class__.__name__}") from None
        data = response.json()
        if response.status_code != 200:
            message = (data.get("error") or {}).get("message") if isinstance(data, dict) else None
            raise EngineError(
                400 if response.status_code < 500 else 502, message or f"llama.cpp said {response.status_code}"
            )
        return data

    async def aclose(self) -> None:
        """Close the client and stop llama.cpp's server: xllamacpp stops it when the object goes away, and waits for
        the batch being evaluated holding the GIL, which stops every thread of the process with it. When a cancelled
        completion may still be in that batch (Ctrl-C), the wait was seconds after "interrupted" (minutes with a 7B
        model): the server is let go in a thread of its own once llama.cpp has reached the end of it."""
        await self._client.aclose()
        server, self._server = self._server, None
        if self._abandoned:
            waiter = threading.Thread(
                target=_release_when_idle,
                args=(server, self.base_url, self._headers, self.options.timeout_s),
                name="llama-release",
                daemon=True,
            )
            waiter.start()


def _release_when_idle(server, base_url: str, headers: dict, timeout_s: float) -> None:
    """Return once llama.cpp is idle; the thread's end drops `server`, which then stops at once. A one-token
    completion, queued behind the cancelled one in the one slot, is answered after it (asking `/slots` instead, as
    often, kept llama.cpp from noticing the cancel at all)."""
    with contextlib.suppress(httpx.HTTPError):
        httpx.post(f"{base_url}/completion", json={"prompt": "\n", "n_predict": 1}, headers=headers, timeout=timeout_s)
