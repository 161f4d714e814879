"""answer: the turn's final answer, with citations.

If the LLM already answered (a message without tool calls), that is the answer.
Otherwise (the rules ended the turn, or there is no LLM) it is written here:
by the LLM from the evidence, or extractively offline.
"""

from __future__ import annotations

import uuid
from typing import cast

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage, SystemMessage, ToolMessage

from executor.core.errors import BackendError
from executor.nodes.common import invoke_llm, lang_of, last_ai, question_messages, text_of, unread_blocks
from executor.nodes.state import ExecutorState
from executor.prompts.executor import ANSWER, NO_QUESTION, unread_note
from executor.prompts.framing import quoted_document
from executor.retrieval.extractive import cited, extractive_answer
from executor.tools.registry import LOOKUP, NAVIGATE


def material(evidence: list[dict]) -> str:
    if not evidence:
        return "(no material)"
    # the title and key are the document's (front matter, file names): inside its fence, with its text
    blocks = [quoted_document(d["title"], d["doc_key"], d.get("domain") or "-", d["content"]) for d in evidence]
    return "\n\n".join(blocks)


def fail(state: ExecutorState) -> ExecutorState:
    """The turn ends in the error: the CLI prints it and exits non-zero, a server sends an error event.
    The lookups' tool messages (saying the knowledge base is unavailable) are already in the checkpoint,
    so the session's next turn starts from a well-formed conversation."""
    raise BackendError(state.get("failure") or "the turn failed")  # routing sends a turn here with its failure


def graph_facts(state: ExecutorState) -> list[str]:
    """What graph navigation answered this turn (not its errors), for the offline answer."""
    messages = state.get("messages", [])
    start = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
    return [
        text_of(m)
        for m in messages[start + 1 :]
        if isinstance(m, ToolMessage) and m.name == NAVIGATE and not text_of(m).startswith("error:")
    ]


def make_answer(model, mode: str, read_document=None):
    """`read_document(kb, doc_key)`: a document's full text, where the offline answer looks for a definition."""

    def answer(state: ExecutorState) -> ExecutorState:
        lang, question, evidence = lang_of(state), state.get("question", ""), state.get("evidence", [])
        last = last_ai(state)
        finished = last is not None and not (last.tool_calls or last.invalid_tool_calls)
        unread = [b for m in question_messages(state.get("messages") or []) for b in unread_blocks(m)]
        if not question:  # nothing to search (routing.after_begin_turn): never "the knowledge base has nothing"
            final = NO_QUESTION + (" " + unread_note(unread, "en") if unread else "")
            return {"answer": final, "citations": [], "messages": [AIMessage(final)]}
        if mode == "llm" and finished and text_of(last).strip():
            final = text_of(last)
            return {"answer": final, "citations": cited(final, evidence)}
        streamed = None  # the id of the answer's message if it was streamed already
        if mode == "llm":
            reply = invoke_llm(
                model, [SystemMessage(ANSWER[lang]), HumanMessage(f"{question}\n\n---\n{material(evidence)}")]
            )
            final, streamed = text_of(reply), reply.id
            if not final.strip():
                # no text where the answer was asked for (a tool call instead, a reasoning model that spent its
                # tokens thinking, a filter): a failed turn, not an empty answer that `ask` exits 0 on
                raise BackendError(
                    "the LLM endpoint sent an empty answer (no text; OPENAI_BASE_URL names it): ask again, or use "
                    "another model"
                )
        else:
            # each lookup's best document: the one it sent first, or the first it pointed back to
            parts = [
                (t["query"], ((t.get("sent") or []) + (t.get("recalled") or []) + [None])[0])
                for t in state.get("trace", [])
                if t["tool"] == LOOKUP and t.get("query")
            ]
            final = extractive_answer(
                question, evidence, lang, parts=parts, graph_facts=graph_facts(state), read_document=read_document
            )
        if unread:
            final += "\n" + unread_note(unread, lang)
        # A `messages` stream (what chat UIs read) sends each message id once: the LLM's reply went out token by
        # token under its own id, so the answer keeps that id (not sent again); the offline answer gets a new id,
        # which the stream sends whole at the end of this node. An empty closing message from the executor is
        # removed, not followed: under its id (already sent, empty) the answer would never be streamed.
        closing = [RemoveMessage(last.id)] if finished and last is not None and last.id else []
        message = AIMessage(final, id=streamed or str(uuid.uuid4()))
        # add_messages takes a RemoveMessage too; the state's type names what the conversation holds
        messages = cast(list[AnyMessage], [*closing, message])
        return {"answer": final, "citations": cited(final, evidence), "messages": messages}

    return answer
