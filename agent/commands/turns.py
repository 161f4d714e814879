"""Talking to the executor: `ask` and `chat`."""

from __future__ import annotations

import uuid
from typing import Annotated

import typer

from agent.commands.common import JsonOpt, KbOpt, SessionOpt, console, echo, handles_errors, print_json, runtime
from agent.errors import ExecutorError, terminal_safe

def _trace_line(entry: dict) -> str:
    what = f"{entry['tool']}({entry.get('query')!r}" + (
        f", missing_dimension={entry['missing_dimension']!r})" if entry.get("missing_dimension") else ")"
    )
    if entry.get("error"):
        return f"  ✗ {what}: {entry['error']}"
    if entry.get("blocked"):
        return f"  ⊘ {what} blocked: {entry.get('dedup_reason')}"
    graph = f", graph {entry['graph']}" if entry.get("graph") else ""
    level = entry.get("relevance_level")
    return f"  → {what} → {level}{graph}" if level else f"  → {what}"


class _LiveTrace:
    """Prints each tool call once, as soon as the graph has decided about it."""

    def __init__(self):
        from agent.tools import LOOKUP  # the registry's name for the one tool graph expansion holds back

        self.shown: set[int] = set()
        self.lookup = LOOKUP

    def __call__(self, node: str, update: dict) -> None:
        if node not in ("guard", "lookup", "graph_expand"):
            return
        for i, entry in enumerate(update.get("trace", [])):
            settled = entry.get("blocked") or entry.get("relevance_level") or entry.get("error") or entry["tool"] != self.lookup
            if node == "lookup" and entry["tool"] == self.lookup and update.get("pending_expansions"):
                settled = settled and not any(p["trace_index"] == i for p in update["pending_expansions"])
            if settled and i not in self.shown:
                self.shown.add(i)
                console.print(terminal_safe(_trace_line(entry)), style="dim", highlight=False, markup=False)


def _agent_turns(kb: str):
    """(run(question, session, ...), mode, closer) over one runtime, model and checkpointer."""
    from contextlib import ExitStack

    from agent.checkpoints import open_checkpointer
    from agent.graph import build_graph
    from agent.llm import make_chat_model
    from agent.session import run_turn
    from agent.state import Context

    from agent.commands.llm import use_local_model

    rt = runtime()
    stack = ExitStack()
    stack.callback(rt.close)
    rt.catalog.require(kb)
    use_local_model(rt, stack)
    model, mode = make_chat_model(rt.settings)
    app = build_graph(rt, model, mode, checkpointer=stack.enter_context(open_checkpointer(rt.settings)))
    context = Context(kb=kb, lookup_budget=rt.settings.lookup_budget)

    def run(question: str, session: str, **callbacks):
        return run_turn(app, question, session, context, mode, max_query_chars=rt.settings.max_query_chars, **callbacks)

    return run, mode, stack


@handles_errors
def ask(
    question: Annotated[str, typer.Argument(help="the question")],
    session: SessionOpt = None,
    kb: KbOpt = "sample",
    as_json: JsonOpt = False,
):
    """Answer one question through the executor graph (LLM if configured, else offline)."""
    session = session or f"ask-{uuid.uuid4().hex[:12]}"
    run, mode, stack = _agent_turns(kb)
    streamed: list[str] = []
    with stack:
        if as_json:
            result = run(question, session)
        else:
            result = run(question, session, on_update=_LiveTrace(), on_token=_echo_into(streamed, prefix=""))
    if as_json:
        print_json(result.model_dump())
        return
    echo("" if streamed else result.answer)
    _print_sources(result)


def _echo_into(streamed: list[str], prefix: str):
    """An on_token callback that prints the answer as it streams (LLM mode) and remembers that it did."""

    def token(text: str) -> None:
        if not streamed and prefix:
            typer.echo(prefix, nl=False)
        streamed.append(text)
        echo(text, nl=False)

    return token


def _print_sources(result) -> None:
    if result.citations:
        console.print(terminal_safe("sources: " + ", ".join(f"{c['title']} [{c['doc_key']}]" for c in result.citations)),
                      style="dim", highlight=False, markup=False)
    console.print(
        f"session {result.session} · {result.mode} · {result.executed_lookups} lookups run, "
        f"{result.blocked_lookups} blocked", style="dim", highlight=False, markup=False,
    )


@handles_errors
def chat(session: SessionOpt = None, kb: KbOpt = "sample"):
    """Chat with the executor; each tool call shows live with its level, or why it was blocked."""
    session = session or f"chat-{uuid.uuid4().hex[:12]}"
    run, mode, stack = _agent_turns(kb)
    failed = False
    with stack:
        console.print(f"[dim]session {session} · {mode} mode · knowledge base {kb} · empty line or Ctrl-D to quit[/]")
        while True:
            try:
                question = input("you> ").strip()
            except EOFError:
                break
            if not question or question in ("exit", "quit"):
                break
            streamed: list[str] = []
            try:
                result = run(question, session, on_update=_LiveTrace(), on_token=_echo_into(streamed, "executor> "))
            except ExecutorError as exc:
                typer.echo(f"error: {exc}", err=True)
                failed = True
                continue
            echo("" if streamed else f"executor> {result.answer}")
            _print_sources(result)
    if failed:  # a turn that failed is not a chat that went well
        raise typer.Exit(2)
