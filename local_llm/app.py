"""The OpenAI-compatible face of the local model: `/v1/chat/completions`, `/v1/models`, `/health`."""

from __future__ import annotations

import contextlib
import json

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from local_llm.engine import EngineError, LlamaEngine
from local_llm.prompt import build_prompt, parse_reply, prompt_for
from local_llm.protocol import RequestError, error_body, parse_request

DEFAULT_MAX_TOKENS = 512


class ChatService:
    """Turns one chat request into one constrained completion. `last_prompt` is the prompt last sent to
    the model (what `executor llm serve --show-prompts` prints, and what tests look at)."""

    def __init__(self, engine: LlamaEngine):
        self.engine = engine
        self.last_prompt: str | None = None

    async def fit(self, turns: list[str], n_predict: int) -> str:
        """The prompt, with the oldest turns after the first question dropped until it fits the context:
        a long tool loop must degrade into a shorter memory, not into an error."""
        limit = self.engine.options.n_ctx - n_predict
        first_user = next((i for i, t in enumerate(turns) if t.startswith("<|im_start|>user")), 0)
        turns = list(turns)
        while True:
            prompt = build_prompt(turns)
            tokens = await self.engine.count_tokens(prompt)
            if tokens <= limit:
                return prompt
            if len(turns) - first_user <= 2:
                raise RequestError(f"the prompt needs {tokens} tokens; the model's context holds {limit} "
                                   f"(n_ctx {self.engine.options.n_ctx} minus {n_predict} to generate)")
            del turns[first_user + 1]

    async def chat(self, raw: bytes):
        request = parse_request(raw)
        turns, schema = prompt_for(request)
        n_predict = min(request.max_completion_tokens or request.max_tokens or DEFAULT_MAX_TOKENS,
                        self.engine.options.n_ctx // 2)
        prompt = await self.fit(turns, n_predict)
        self.last_prompt = prompt
        out = await self.engine.complete(prompt, schema, n_predict, request.temperature or 0.0, request.seed)
        reply = parse_reply(out.get("content", ""), schema is not None, out.get("stop_type") == "limit")
        reply.prompt_tokens, reply.completion_tokens = out.get("tokens_evaluated", 0), out.get("tokens_predicted", 0)
        return request, reply


def create_app(service: ChatService) -> Starlette:
    alias = service.engine.options.alias

    async def chat_completions(request: Request):
        try:
            chat, reply = await service.chat(await request.body())
        except RequestError as exc:
            return JSONResponse(error_body(str(exc)), status_code=400)
        except EngineError as exc:
            return JSONResponse(error_body(str(exc), "server_error" if exc.status >= 500 else "invalid_request_error"),
                                status_code=exc.status)
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


def _lifespan(service: ChatService):
    @contextlib.asynccontextmanager
    async def lifespan(app):
        yield
        await service.engine.aclose()

    return lifespan
