"""The OpenAI chat-completions request, validated, and the response shapes built from a model reply."""

from __future__ import annotations

import json
import time
import uuid
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, ValidationInfo, field_validator

from executor.core.errors import validation_line
from executor.core.local_http import json_body, json_leaves
from executor.local_llm.schema_bounds import SchemaRefused, check_tools

# the content parts a text model reads, each with the key holding its text
TEXT_PARTS = {"text": "text", "refusal": "refusal"}
UNREAD = "\n[a part of type {kind} was attached here; it is not shown: this model reads text only]\n"
MAX_STOPS = 4  # OpenAI's bound on `stop`
# OpenAI's sampling options llama.cpp applies by the same names: `top_p`, and the penalties over the last 64 tokens of
# the conversation (llama.cpp's window, the prompt's tokens in it), where OpenAI counts the reply's
SAMPLING = ("top_p", "frequency_penalty", "presence_penalty", "logit_bias")
TokenId = Annotated[int, Field(ge=0)]


class FunctionCall(BaseModel):
    name: str = Field(min_length=1)
    arguments: str = "{}"


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str | None = None
    type: Literal["function"] = "function"
    function: FunctionCall


class Message(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "developer", "user", "assistant", "tool"]
    # validated when left out too: only an assistant's turn may have none (OpenAI's rule: its tool calls said it)
    content: str | list[dict[str, Any]] | None = Field(default=None, validate_default=True)
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None

    @field_validator("content")
    @classmethod
    def _said(cls, value, info: ValidationInfo):
        """A turn other than the assistant's has content: a user message of `null` was answered as if empty, 200
        (hostile22 finding 11)."""
        role = info.data.get("role")
        if value is None and role not in (None, "assistant"):
            raise ValueError(f"a {role} message needs its content (text or content parts)")
        return value

    @field_validator("content")
    @classmethod
    def _typed_parts(cls, value):
        """Each content part says what it is (`type`), and a text part holds its text as a string: a part without a
        type was dropped, and the model answered an empty turn."""
        for i, part in enumerate(value if isinstance(value, list) else []):
            kind = part.get("type")
            if not isinstance(kind, str) or not kind:
                raise ValueError(f"{i}: a content part needs its type ('text', 'image_url', ...)")
            if kind in TEXT_PARTS and not isinstance(part.get(TEXT_PARTS[kind]), str):
                raise ValueError(f"{i}: a {kind!r} part needs its {TEXT_PARTS[kind]!r} as a string")
        return value

    @property
    def text(self) -> str:
        """Content parts joined. A part that is not text (an image, audio, a file) is named where it was, as not
        shown: this model reads text only. Dropped without a word, the model answered as if it had seen the image
        ("This image is a stunning example of ..."); refused, the executor's own turns failed on a question that came
        with an image (it sends the conversation as the client gave it, and answers from the text)."""
        if not isinstance(self.content, list):
            return self.content or ""
        return "".join(
            p[TEXT_PARTS[p["type"]]] if p["type"] in TEXT_PARTS else UNREAD.format(kind=str(p["type"])[:40])
            for p in self.content
        )


class FunctionSpec(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_\-]+$")
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class Tool(BaseModel):
    type: Literal["function"]
    function: FunctionSpec


class NamedToolChoice(BaseModel):
    type: Literal["function"]
    function: dict[str, str]

    @field_validator("function")
    @classmethod
    def _has_name(cls, value: dict[str, str]) -> dict[str, str]:
        if not value.get("name"):
            raise ValueError("tool_choice.function needs a name")
        return value


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")  # parallel_tool_calls, user, ...: not meaningful here

    model: str | None = None
    messages: list[Message] = Field(min_length=1)
    tools: list[Tool] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedToolChoice | None = None
    temperature: float | None = Field(default=None, ge=0, le=2, allow_inf_nan=False)
    seed: int | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    # JSON's true or false only: pydantic's lax mode read "yes", "on" or 1 as a request to stream
    stream: StrictBool = False
    stream_options: dict[str, Any] | None = None
    # one choice is made: a client asking for several got one back with a 200
    n: int | None = Field(default=None, ge=1, le=1)
    # read to be refused: an output format this endpoint does not constrain to (see parse_request)
    response_format: dict[str, Any] | None = None
    # ignored, text past a stop sequence was answered (a ReAct prompt's "Observation:" made up by the model)
    stop: str | list[str] | None = None
    # read to be refused: ignored, a client asking for log probabilities got an answer without them
    logprobs: StrictBool | None = None
    top_logprobs: int | None = None
    # OpenAI's sampling options, within OpenAI's bounds, handed to llama.cpp (`sampling`): ignored, a client banning
    # a token with logit_bias got it anyway, and a top_p of -1 was a 200 (hostile22 finding 11)
    top_p: float | None = Field(default=None, ge=0, le=1, allow_inf_nan=False)
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2, allow_inf_nan=False)
    presence_penalty: float | None = Field(default=None, ge=-2, le=2, allow_inf_nan=False)
    # token ids (JSON's keys are strings: "50256"), each with its bias; an id the model lacks is the engine's to refuse
    logit_bias: dict[TokenId, Annotated[float, Field(ge=-100, le=100, allow_inf_nan=False)]] | None = None

    @field_validator("stop")
    @classmethod
    def _stops(cls, value):
        stops = [value] if isinstance(value, str) else value
        if stops is not None and (len(stops) > MAX_STOPS or not all(stops)):
            raise ValueError(f"at most {MAX_STOPS} stop sequences, none of them empty")
        return stops

    def sampling(self) -> dict[str, Any]:
        """The sampling options the client set, by OpenAI's names (`logit_bias` keyed by token id); what it left
        out is the engine's default."""
        return {name: getattr(self, name) for name in SAMPLING if getattr(self, name) is not None}

    @property
    def stops(self) -> list[str]:
        return list(self.stop or [])

    @property
    def forced_tool(self) -> str | None:
        return self.tool_choice.function["name"] if isinstance(self.tool_choice, NamedToolChoice) else None

    def active_tools(self) -> list[FunctionSpec]:
        """The tools the reply may call: none for tool_choice "none", only the named one when one is named."""
        tools = [t.function for t in self.tools or []]
        if self.tool_choice == "none":
            return []
        if self.forced_tool:
            chosen = [t for t in tools if t.name == self.forced_tool]
            if not chosen:
                raise RequestError(f"tool_choice names {self.forced_tool!r}, which is not among the tools")
            return chosen
        return tools

    @property
    def must_call_tool(self) -> bool:
        return self.tool_choice == "required" or self.forced_tool is not None


class RequestError(ValueError):
    """A malformed request: answered with 400 and this one line."""


def parse_request(body: bytes) -> ChatRequest:
    try:
        data = json_body(body)
    except ValueError:  # not UTF-8, not JSON, or nested too deeply to parse
        raise RequestError("the request body is not JSON") from None
    if not isinstance(data, dict):
        raise RequestError("the request body must be a JSON object")
    where = _lone_surrogate(data)
    if where is not None:  # JSON's "\ud800" escape is a str Python takes, but no text the engine can be sent
        raise RequestError(f"{where}: a lone surrogate (\\ud800-\\udfff) is not text; send valid Unicode")
    try:
        request = ChatRequest.model_validate(data)
    except ValidationError as exc:
        raise RequestError(validation_line(exc, "body")) from None
    if request.tool_choice not in (None, "none", "auto") and not request.tools:
        raise RequestError("tool_choice asks for a tool call, but the request has no tools")
    _check_functions([tool.function for tool in request.tools or []])
    try:  # only the tools the reply may call become the grammar (and a named tool that is not there is refused)
        check_tools([(tool.name, tool.parameters) for tool in request.active_tools()])
    except SchemaRefused as exc:
        raise RequestError(str(exc)) from None
    if request.logprobs or request.top_logprobs is not None:
        raise RequestError("logprobs and top_logprobs are not supported: the reply carries no log probabilities")
    if request.stops and request.active_tools():
        # the reply is then JSON decoded to a grammar (a tool call or {"answer": ...}): a stop sequence would cut it
        raise RequestError("stop is not supported with tools: the reply is decoded whole to the tools' JSON schemas")
    kind = (request.response_format or {}).get("type", "text")
    if kind != "text":
        # ignored, a client that asked for JSON (`with_structured_output(method="json_schema")`) got free text, 200
        raise RequestError(
            f"response_format {str(kind)[:40]!r} is not supported: ask for a tool call instead (tools and "
            "tool_choice), which is decoded to the tool's JSON schema"
        )
    return request


def _check_functions(functions: list[FunctionSpec]) -> None:
    """Two tools under one name, or a tool whose parameters are no object schema, are refused: the grammar took
    either, and the reply was empty with finish_reason "length" after seconds of the one engine (a call's arguments
    are a JSON object, as OpenAI's API requires of `parameters`)."""
    seen: set[str] = set()
    for function in functions:
        if function.name in seen:
            raise RequestError(f"tools: {function.name!r} is given twice; each tool needs a name of its own")
        seen.add(function.name)
        kind = function.parameters.get("type", "object")
        if kind != "object":
            raise RequestError(
                f"tool {function.name!r}: parameters must be a JSON schema of type 'object' (the call's arguments), "
                f"not {str(kind)[:40]!r}"
            )


def _lone_surrogate(data) -> str | None:
    """Where (`messages.0.content`) the first string holding a lone surrogate is (a key's: its object's), or
    None."""
    for path, value in json_leaves(data):
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return ".".join(map(str, path)) or "body"
    return None


def error_body(message: str, kind: str = "invalid_request_error") -> dict:
    return {"error": {"message": " ".join(message.split()), "type": kind}}


class Reply(BaseModel):
    """What the model said: text, or one tool call (constrained decoding yields at most one)."""

    content: str | None = None
    tool_name: str | None = None
    tool_arguments: dict[str, Any] | None = None
    finish_reason: Literal["stop", "length", "tool_calls"] = "stop"
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def message(self) -> dict:
        if self.tool_name is None:
            return {"role": "assistant", "content": self.content or ""}
        return {"role": "assistant", "content": None, "tool_calls": [self._tool_call()]}

    def _tool_call(self) -> dict:
        return {
            "id": f"call_{uuid.uuid4().hex[:24]}",
            "type": "function",
            "function": {
                "name": self.tool_name,
                "arguments": json.dumps(self.tool_arguments or {}, ensure_ascii=False),
            },
        }

    def usage(self) -> dict:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }

    def completion(self, model: str) -> dict:
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": self.message(), "finish_reason": self.finish_reason}],
            "usage": self.usage(),
        }

    def chunks(self, model: str, include_usage: bool) -> list[dict]:
        """The whole reply as one streamed delta, then the finish reason (and the usage when asked for)."""
        base = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
        }
        if self.tool_name is None:
            delta = {"role": "assistant", "content": self.content or ""}
        else:
            delta = {"role": "assistant", "content": None, "tool_calls": [{"index": 0, **self._tool_call()}]}
        out = [
            base | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            base | {"choices": [{"index": 0, "delta": {}, "finish_reason": self.finish_reason}]},
        ]
        if include_usage:
            out.append(base | {"choices": [], "usage": self.usage()})
        return out
