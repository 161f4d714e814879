"""Tool calling for models that were never taught it: a ChatML prompt that lists the tools, and a JSON
schema that llama.cpp turns into a grammar, so the reply is a well-formed tool call or an answer.

The reply is `{"tool_call": {"name": ..., "arguments": {...}}}` or `{"answer": "..."}`; earlier tool
calls are written back in that form and tool results as `<tool_response>` turns, so the model sees
its own history in the format it is asked to produce.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from executor.local_llm.protocol import ChatRequest, FunctionSpec, Message, Reply
from executor.local_llm.schema_bounds import MAX_ITEMS, MAX_STRING

# Bounds on what the grammar lets the model generate: a 135M model at temperature 0 fills a free
# string with digits or a list with items until n_predict runs out (seen), and a cut-off JSON reply is
# worth nothing. With these bounds (MAX_STRING, MAX_ITEMS; schema_bounds keeps what a schema forces small) a
# reply fits in schema_bounds.CONSTRAINED_TOKENS.
MAX_ANSWER = 800
_DROP_KEYS = {"title", "default", "examples"}


# llama.cpp reads the prompt's special tokens from its text: `<|im_end|>` in a message (a retrieved document, a
# question) was the model's own end-of-turn token, and `<|im_start|>system` after it a system turn, outside every
# fence the text was put in. A zero-width space after the `<` of `<|` leaves such text as plain characters.
_SPECIAL_OPEN = "<|"
_PLAIN_OPEN = "<\u200b|"


def _turn(role: str, text: str) -> str:
    return f"<|im_start|>{role}\n{text.replace(_SPECIAL_OPEN, _PLAIN_OPEN)}<|im_end|>\n"


def tools_section(tools: list[FunctionSpec], must_call: bool) -> str:
    listing = "\n".join(
        json.dumps(
            {"name": t.name, "description": t.description, "parameters": _bounded(t.parameters)},
            ensure_ascii=False,
            separators=(",", ":"),
        )
        for t in tools
    )
    choice = (
        '{"tool_call": {"name": <tool name>, "arguments": {...}}}'
        if must_call
        else '{"tool_call": {"name": <tool name>, "arguments": {...}}} to call a tool, '
        'or {"answer": "<your answer>"} to answer'
    )
    return f"# Tools\nYou may call one of these tools:\n{listing}\n\nReply with JSON only: {choice}."


def _call_json(name: str, arguments: Any) -> str:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            pass  # written back as the string the model (or client) sent
    return json.dumps({"tool_call": {"name": name, "arguments": arguments}}, ensure_ascii=False)


def render_messages(messages: list[Message], tools: list[FunctionSpec], must_call: bool) -> list[str]:
    """One ChatML turn per message (system first, with the tools appended when there are any)."""
    system = "\n\n".join(m.text for m in messages if m.role in ("system", "developer") and m.text)
    if tools:
        system = "\n\n".join(p for p in (system, tools_section(tools, must_call)) if p)
    turns = [_turn("system", system)] if system else []
    for m in messages:
        if m.role in ("system", "developer"):
            continue
        if m.role == "tool":
            turns.append(_turn("user", f"<tool_response>\n{m.text}\n</tool_response>"))
        elif m.role == "assistant" and m.tool_calls:
            calls = "\n".join(_call_json(c.function.name, c.function.arguments) for c in m.tool_calls)
            turns.append(_turn("assistant", calls))
        elif m.role == "assistant":
            turns.append(_turn("assistant", json.dumps({"answer": m.text}, ensure_ascii=False) if tools else m.text))
        else:
            turns.append(_turn("user", m.text))
    return turns


def build_prompt(turns: list[str]) -> str:
    return "".join(turns) + "<|im_start|>assistant\n"


def _bounded(schema: Any) -> Any:
    """A copy of a JSON schema with titles dropped, objects closed and strings and lists bounded. A bound never
    goes below the schema's own minLength or minItems: a grammar asking for 9 items and allowing 8 could not be
    finished, and the reply was empty with finish_reason "length" (schema_bounds refuses minimums too large for a
    reply). The request was validated there: the counts are non-negative integers, each minimum at most its
    maximum."""
    if isinstance(schema, list):
        return [_bounded(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _bounded(v) for k, v in schema.items() if k not in _DROP_KEYS}
    kinds = out.get("type")
    kinds = set(kinds) if isinstance(kinds, list) else {kinds}  # ["string", "null"] is a string too
    if "object" in kinds or "properties" in out:
        out["additionalProperties"] = False
    if "string" in kinds and "enum" not in out and "const" not in out:
        out["maxLength"] = max(min(out.get("maxLength", MAX_STRING), MAX_STRING), out.get("minLength", 0))
    if "array" in kinds:
        out["maxItems"] = max(min(out.get("maxItems", MAX_ITEMS), MAX_ITEMS), out.get("minItems", 0))
    return out


def reply_schema(tools: list[FunctionSpec], must_call: bool) -> dict | None:
    """The grammar's schema: one of the tool calls, or (unless a call is required) an answer; None for no tools."""
    if not tools:
        return None
    calls = [
        {
            "type": "object",
            "properties": {"name": {"const": t.name}, "arguments": _bounded(copy.deepcopy(t.parameters))},
            "required": ["name", "arguments"],
            "additionalProperties": False,
        }
        for t in tools
    ]
    tool_branch = {
        "type": "object",
        "properties": {"tool_call": calls[0] if len(calls) == 1 else {"anyOf": calls}},
        "required": ["tool_call"],
        "additionalProperties": False,
    }
    if must_call:
        return tool_branch
    answer_branch = {
        "type": "object",
        "properties": {"answer": {"type": "string", "maxLength": MAX_ANSWER}},
        "required": ["answer"],
        "additionalProperties": False,
    }
    return {"anyOf": [tool_branch, answer_branch]}


def parse_reply(text: str, constrained: bool, truncated: bool) -> Reply:
    """The model's text as an OpenAI reply. A constrained reply cut off by the token limit becomes an empty
    reply with finish_reason "length": never half a tool call, and never its JSON passed off as an answer."""
    if not constrained:
        return Reply(content=text.strip(), finish_reason="length" if truncated else "stop")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return Reply(content="", finish_reason="length")
    if isinstance(data, dict) and isinstance(data.get("tool_call"), dict):
        call = data["tool_call"]
        return Reply(tool_name=call.get("name"), tool_arguments=call.get("arguments") or {}, finish_reason="tool_calls")
    answer = data.get("answer") if isinstance(data, dict) else None
    return Reply(content=answer if isinstance(answer, str) else text.strip())


def prompt_for(request: ChatRequest) -> tuple[list[str], dict | None]:
    """(ChatML turns, grammar schema or None) for a request."""
    tools = request.active_tools()
    return render_messages(request.messages, tools, request.must_call_tool), reply_schema(tools, request.must_call_tool)
