"""Small helpers the nodes share."""

from __future__ import annotations

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from executor.core.errors import BackendError, first_line, llm_transport, redact
from executor.core.relevance import language_of
from executor.nodes.state import ExecutorState


def session_of(config: RunnableConfig) -> str:
    """The session is the checkpointer's thread; a run without one (a bare invoke) is its own session."""
    return str((config.get("configurable") or {}).get("thread_id") or "default")


def _blocks(message) -> list:
    """A message's content as a list of blocks: a plain string is one text block. A message may also be a dict
    (`{"role": ..., "content": ...}`) where a client's payload is read before LangGraph converts it."""
    content = message.get("content", "") if isinstance(message, dict) else getattr(message, "content", "")
    if content is None:
        return []
    return content if isinstance(content, list) else [str(content)]


def _block_text(block) -> str | None:
    """The text of one content block (a string, or a {"type": "text"} block); None for any other kind."""
    if isinstance(block, str):
        return block
    if isinstance(block, dict) and block.get("type", "text") == "text" and isinstance(block.get("text"), str):
        return block["text"]
    return None


def text_of(message) -> str:
    """What a message says, in every standard shape LangChain clients send: a string, or content blocks
    (`[{"type": "text", "text": ...}, {"type": "image", ...}]`, what the Agent Chat UI sends). Separate text
    blocks are separate lines; other blocks are not text and are left out (`unread_blocks` names them): their
    Python repr would otherwise become the query. The one reader of message text: graph, planner, CLI."""
    return "\n".join(t for t in map(_block_text, _blocks(message)) if t is not None)


def unread_blocks(message) -> list[str]:
    """The kinds of the content blocks `text_of` leaves out (image, file, audio, ...), for the answer to say so."""
    return [
        str(b.get("type") or "unknown") if isinstance(b, dict) else type(b).__name__
        for b in _blocks(message)
        if _block_text(b) is None
    ]


def question_messages(messages: list) -> list[HumanMessage]:
    """The user messages the turn answers: the last one, and those right before it that nothing answered (two
    messages sent before a run started, a question and its follow-up). Only the last was read: the first went
    unanswered and nothing said so (hostile22 finding 10)."""
    asked: list[HumanMessage] = []
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            asked.insert(0, message)
        elif asked:
            break
    return asked


def question_of(messages: list) -> str:
    """The turn's question: the text of its user messages (`question_messages`), one line each; one sent twice (a
    question asked again after a run that failed) once."""
    return "\n".join(dict.fromkeys(t for m in question_messages(messages) if (t := text_of(m).strip())))


def last_question(state: ExecutorState) -> str:
    return question_of(state.get("messages") or [])


def lang_of(state: ExecutorState) -> str:
    return language_of(state.get("question") or last_question(state))


def last_ai(state: ExecutorState) -> AIMessage | None:
    messages = state.get("messages") or []
    return messages[-1] if messages and isinstance(messages[-1], AIMessage) else None


NOT_RUN = "not run: the turn that asked for this was stopped before it ran"


def _calls_of(message: AIMessage) -> list[tuple[str, str]]:
    """(id, name) of each call the message makes; those whose arguments were no JSON (`invalid_tool_calls`) count
    too: ChatOpenAI sends them as tool calls."""
    return [(c["id"], c["name"] or "") for c in [*message.tool_calls, *message.invalid_tool_calls] if c["id"]]


def open_tool_calls(messages: list[AnyMessage]) -> list[tuple[str, str]]:
    """(id, name) of the calls the conversation's last assistant message made that no result after it answers: what a
    run stopped mid-step leaves open. Only those can be answered by appending results; calls an earlier turn left
    open are mended by `paired_tool_calls` when the model is sent the conversation. Matched by position, not by
    id alone: ids repeat across turns with some endpoints."""
    waiting: list[tuple[str, str]] = []
    for message in messages:
        if isinstance(message, ToolMessage):
            waiting = [(i, n) for i, n in waiting if i != message.tool_call_id]
        elif isinstance(message, AIMessage):
            waiting = _calls_of(message)
        else:
            waiting = []
    return waiting


def paired_tool_calls(messages: list[AnyMessage]) -> list[AnyMessage]:
    """The conversation as the model is sent it: each tool call an earlier turn left without a result gets one
    saying it was not run, right after the results its message has. A run stopped after the model asked for a
    tool (a chat UI's Stop, a run cancelled or interrupted on LangGraph's server, a client gone) leaves such a
    call in the thread's checkpoint, and an OpenAI-style endpoint refuses every later request of that thread
    ("An assistant message with 'tool_calls' must be followed by tool messages"). A call is matched with the
    results right after its message, not by id alone: ids repeat across turns with some endpoints. A result no call
    right before it asked for is left out (the endpoint refuses it as well; a chat thread cancelled with Ctrl-C
    before 39124ad can hold one). The checkpoint keeps what happened: only what the model reads is mended."""
    out: list[AnyMessage] = []
    waiting: list[tuple[str, str]] = []  # (id, name) of the last assistant message's calls that have no result yet

    def close_waiting() -> None:
        out.extend(ToolMessage(NOT_RUN, tool_call_id=i, name=n) for i, n in waiting)
        waiting.clear()

    for message in messages:
        if isinstance(message, ToolMessage):
            if message.tool_call_id not in [i for i, _ in waiting]:
                continue  # a result no call right before it asked for: the endpoint refuses it too
            waiting[:] = [(i, n) for i, n in waiting if i != message.tool_call_id]
            out.append(message)
            continue
        close_waiting()
        out.append(message)
        if isinstance(message, AIMessage):
            waiting.extend(_calls_of(message))
    close_waiting()
    return out


def invoke_llm(model, messages):
    """`model.invoke(messages)`; a transport or API failure becomes a one-line BackendError that ends the turn."""
    try:
        return model.invoke(messages)
    except Exception as exc:
        if isinstance(exc, ValueError) and "No generations found in stream" in str(exc):
            # an endpoint (or a proxy) that ignores `stream: true` and answers with one JSON body: langchain reads
            # no event from it
            raise BackendError(
                "the LLM endpoint sent no streamed answer (it ignores `stream: true`; OPENAI_BASE_URL names it)"
            ) from exc
        if not llm_transport(exc):
            raise
        # where it was asked (`openai_api_base`: ChatOpenAI's), so that "Connection error." names the address to check
        url = getattr(model, "openai_api_base", None)
        where = f" at {redact(url)}" if isinstance(url, str) and url else ""
        raise BackendError(f"the LLM is unavailable{where}: {exc.__class__.__name__}: {first_line(exc)}") from exc
