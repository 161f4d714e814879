"""The OpenAI-compatible face of the local model: `/v1/chat/completions`, `/v1/models`, `/health`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from executor.local_llm.engine import EngineError, LlamaEngine
from executor.local_llm.prompt import build_prompt, parse_reply, prompt_for
from executor.local_llm.protocol import RequestError, error_body, parse_request
from executor.local_llm.schema_bounds import CONSTRAINED_TOKENS

log = logging.getLogger("local_llm")
MAX_FIT_STEPS = 64
# More characters than one token of this model spans (its longest tokens are runs of spaces or of one symbol): a
# turn longer than the context's tokens times this cannot fit, so it is cut to that before anything is counted.
# Counting a multi-MB prompt, again on every step of `fit`, held the one engine for minutes.
MAX_CHARS_PER_TOKEN = 32
CUT = "\n[...]"
_END = "<|im_end|>\n"
T = TypeVar("T")


class ChatService:
    """Turns one chat request into one (constrained) completion. `last_prompt` is the prompt last sent to
    the model, for whoever runs the service in-process (tests look at it)."""

    def __init__(self, engine: LlamaEngine):
        self.engine = engine
        self.last_prompt: str | None = None
        self.running: set[asyncio.Future] = set()  # the requests being answered, for `abort`
        self._loop: asyncio.AbstractEventLoop | None = None  # the server's, once it has started

    def serve_on(self, loop: asyncio.AbstractEventLoop | None) -> None:
        self._loop = loop

    def abort(self) -> None:
        """Cancel the requests being answered, from any thread (the process running the endpoint was interrupted):
        each is answered 499 at once, and llama.cpp stops at its next token or batch, as for a client that left."""
        loop = self._loop
        if loop is None:
            return
        try:
            loop.call_soon_threadsafe(self._cancel_running)
        except RuntimeError:  # the server has stopped and its loop is closed: nothing runs
            pass

    def _cancel_running(self) -> None:
        for request in list(self.running):
            request.cancel()

    async def fit(self, turns: list[str], n_predict: int) -> str:
        """The prompt, made to fit the context: first the oldest turns after the first question are dropped,
        then the longest turn is cut short. A long tool loop or a long evidence list must degrade into a
        shorter memory, not into an error."""
        limit = self.engine.options.n_ctx - n_predict
        first_user = next((i for i, t in enumerate(turns) if t.startswith("<|im_start|>user")), 0)
        cap = limit * MAX_CHARS_PER_TOKEN
        turns = [t if len(t) <= cap else t[:cap] + CUT + _END for t in turns]
        for _ in range(MAX_FIT_STEPS):
            prompt = build_prompt(turns)
            tokens = await self.engine.count_tokens(prompt)
            if tokens <= limit:
                return prompt
            droppable = len(turns) - first_user - 2  # keep the first question and the newest turn
            if droppable > 0:
                # half the history at once: the prompt then grows from a stable prefix again for a few
                # rounds, which llama.cpp's prompt cache serves, instead of shifting on every request
                del turns[first_user + 1 : first_user + 1 + max(1, droppable // 2)]
                continue
            longest = max(range(len(turns)), key=lambda i: len(turns[i]))
            keep = int(len(turns[longest]) * limit / tokens * 0.9)
            if keep < 200:
                break
            turns[longest] = turns[longest][:keep] + CUT + _END
        raise RequestError(
            f"the prompt does not fit the model's context of {limit} tokens "
            f"(n_ctx {self.engine.options.n_ctx} minus {n_predict} to generate)"
        )

    async def _check_tokens(self, logit_bias: dict[int, float]) -> None:
        """A logit_bias of a token id the model does not have is refused: llama.cpp skips it, and the client's ban
        (or choice) of that token is silently not made."""
        if not logit_bias:
            return
        size = await self.engine.vocabulary_size()
        unknown = sorted(token for token in logit_bias if token >= size)
        if unknown:
            raise RequestError(
                f"logit_bias: token id {unknown[0]} is not in this model's vocabulary (ids 0 to {size - 1})"
            )

    async def chat(self, raw: bytes):
        request = parse_request(raw)
        await self._check_tokens(request.logit_bias or {})
        turns, schema = prompt_for(request)
        asked = request.max_completion_tokens or request.max_tokens
        default = CONSTRAINED_TOKENS if schema else self.engine.options.max_tokens
        n_predict = min(asked or default, self.engine.options.n_ctx // 2)
        prompt = await self.fit(turns, n_predict)
        self.last_prompt = prompt
        out = await self.engine.complete(
            prompt, schema, n_predict, request.temperature or 0.0, request.seed, request.stops, request.sampling()
        )
        t = out.get("timings") or {}
        log.debug("reply: %r", out.get("content"))
        log.info(
            "prompt %s tokens (%s cached) at %.0f tokens/s, %s generated at %.1f tokens/s%s",
            t.get("prompt_n"),
            t.get("cache_n"),
            t.get("prompt_per_second") or 0,
            t.get("predicted_n"),
            t.get("predicted_per_second") or 0,
            ", constrained" if schema else "",
        )
        reply = parse_reply(out.get("content", ""), schema is not None, out.get("stop_type") == "limit")
        reply.prompt_tokens, reply.completion_tokens = out.get("tokens_evaluated", 0), out.get("tokens_predicted", 0)
        return request, reply


def create_app(service: ChatService) -> Starlette:
    alias = service.engine.options.alias

    async def chat_completions(request: Request):
        try:
            answered = await _unless_cancelled(request, service.chat(await request.body()), service.running)
            if answered is None:  # the engine has been told to stop: nobody reads the answer, or its reader stopped
                return JSONResponse(error_body("the request was cancelled"), status_code=499)
            chat, reply = answered
        except RequestError as exc:
            return JSONResponse(error_body(str(exc)), status_code=400)
        except EngineError as exc:
            return JSONResponse(
                error_body(str(exc), "server_error" if exc.status >= 500 else "invalid_request_error"),
                status_code=exc.status,
            )
        if not chat.stream:
            return JSONResponse(reply.completion(alias))
        include_usage = bool((chat.stream_options or {}).get("include_usage"))

        async def events():
            for chunk in reply.chunks(alias, include_usage):
                yield f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n"
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    async def models(request: Request):
        return JSONResponse({"object": "list", "data": [{"id": alias, "object": "model", "owned_by": "local"}]})

    async def health(request: Request):
        return JSONResponse({"status": "ok", "model": alias})

    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/health", health, methods=["GET"]),
        ],
        lifespan=_lifespan(service),
    )


async def _unless_cancelled(request: Request, work: Coroutine[Any, Any, T], running: set[asyncio.Future]) -> T | None:
    """`work`'s result, or None when it was cancelled: by the client going away first (a timeout, a client's
    Ctrl-C), or through `running` (ChatService.abort: Ctrl-C in the command that serves the model in-process). The
    engine's request is cancelled with it, which makes llama.cpp stop generating. The answer is made whole
    before it is sent (streamed or not), so a client that left went on holding the one engine for up to n_ctx/2
    tokens, minutes on a CPU, and every later request waited for it."""
    task = asyncio.ensure_future(work)
    running.add(task)

    async def gone() -> None:
        while (await request.receive())["type"] != "http.disconnect":  # the body was read: only this can come
            pass

    watcher = asyncio.ensure_future(gone())
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
        running.discard(task)
    if not task.done():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    return None if task.cancelled() else task.result()


def _lifespan(service: ChatService):
    @contextlib.asynccontextmanager
    async def lifespan(app):
        service.serve_on(asyncio.get_running_loop())
        yield
        service.serve_on(None)
        await service.engine.aclose()

    return lifespan
