"""Talking to the executor: `ask`, and what `chat` shares with it (the turn runner, the trace in plain words)."""

from __future__ import annotations

from typing import Annotated

import typer

from executor.cli.commands.common import (
    JsonOpt,
    KbOpt,
    SessionOpt,
    console,
    echo,
    print_json,
    runtime,
    session_or_new,
    warn_damaged_graph,
)
from executor.core.errors import terminal_safe, warn
from executor.tools.registry import KG_QUERY, LOOKUP, NAVIGATE

# what the executor's decisions mean, for a person; the code name follows in brackets
LEVEL_WORDS = {
    "PRECISE": "one document answers it exactly",
    "HIGHLY_RELEVANT": "closely matching documents",
    "REFERENCE": "only related references",
    "NONE": "nothing relevant in the knowledge base",
    "DEDUPED": "nothing new",
}
BLOCK_WORDS = {
    "doc_retrieved": "its documents were already sent in this session",
    "domain_retrieved": "this topic was already answered in this session",
    "precise_reached": "an exact answer was already found",
    "budget_spent": "this turn's lookup budget is spent",
    "invalid_arguments": "the call was malformed",
    "unknown_tool": "no such tool",
}
GRAPH_WORDS = {
    "expanded": "the knowledge graph added related documents",
    "nothing_new": "the knowledge graph had nothing to add",
    "unavailable": "the knowledge graph is unavailable",
    "no_graph": "this knowledge base has no graph",
}
TOOL_WORDS = {  # (what was done, what it is called when it was not)
    LOOKUP: ("looked up", "lookup"),
    KG_QUERY: ("searched the knowledge bases for", "knowledge-base search"),
    NAVIGATE: ("followed the knowledge graph from", "graph walk"),
}


def trace_line(entry: dict) -> str:
    """One tool call in plain words, e.g. `→ looked up “ERR_TIMEOUT”: one document answers it exactly [PRECISE]`."""
    done, noun = TOOL_WORDS.get(entry["tool"], (entry["tool"], entry["tool"]))
    subject = f"“{entry.get('query') or ''}”"
    if entry.get("missing_dimension"):
        subject += f" (missing: {entry['missing_dimension']})"
    what = f"{done} {subject}"
    if entry.get("blocked"):
        reason = entry.get("dedup_reason") or ""
        return f"  ⊘ {noun} {subject} skipped: {BLOCK_WORDS.get(reason, reason.replace('_', ' '))} [{reason}]"
    if entry.get("error"):
        return f"  ✗ {noun} {subject} failed: {entry['error']}"
    level = entry.get("relevance_level")
    line = f"  → {what}"
    if level:
        line += f": {LEVEL_WORDS.get(level, level)} [{level}]"
    if entry.get("graph"):
        line += f"; {GRAPH_WORDS.get(entry['graph'], entry['graph'])} [graph {entry['graph']}]"
    return line


class LiveTrace:
    """Prints each tool call once, as soon as the graph has decided about it."""

    def __init__(self, print_line=None):
        self.shown: set[int] = set()
        self.print_line = print_line or (lambda text: console.print(text, style="dim", highlight=False, markup=False))

    def __call__(self, node: str, update: dict) -> None:
        if node not in ("guard", "call_tools", "graph_expand"):
            return
        for i, entry in enumerate(update.get("trace", [])):
            # other tools have no level: they are settled once they ran (or were refused)
            ran = node != "guard" and entry["tool"] != LOOKUP
            settled = entry.get("blocked") or entry.get("relevance_level") or entry.get("error") or ran
            if node == "call_tools" and entry["tool"] == LOOKUP and update.get("pending_expansions"):
                settled = settled and not any(p["trace_index"] == i for p in update["pending_expansions"])
            if settled and i not in self.shown:
                self.shown.add(i)
                self.print_line(terminal_safe(trace_line(entry)))


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def summary_lines(result) -> list[str]:
    """The sources and the turn's counts, under an answer."""
    lines = []
    if result.citations:
        lines.append("sources: " + ", ".join(f"{c['title']} [{c['doc_key']}]" for c in result.citations))
    lines.append(
        f"session {result.session} · {result.mode} · {plural(result.executed_lookups, 'lookup')} run, "
        f"{result.blocked_lookups} blocked"
    )
    return lines


def print_summary(result) -> None:
    for line in summary_lines(result):
        console.print(terminal_safe(line), style="dim", highlight=False, markup=False)


class Turns:
    """One runtime, model, graph and checkpointer for a series of turns, in any session and knowledge base."""

    def __init__(self, source: str):
        self.rt = runtime(source, serve_model=True)
        try:
            self.mode = self.rt.chat_model[1]
            self.app = self.rt.app(checkpointer=self.rt.checkpointer)
        except BaseException:
            self.rt.close()
            raise

    def check_kb(self, kb: str) -> str | None:
        """A KB no ingest has filled is refused before the turn: inside it, the failed lookup would be answered
        as "nothing on this question" (hostile21 finding 14). Returns the folder it was ingested from."""
        return self.rt.catalog.require_ingested(kb).source_path

    def warm_up(self, kb: str) -> None:
        """Load what the first question would wait for (the embedder, the vector store, the KB's collection)."""
        source = self.check_kb(kb)
        self.rt.start_loading()
        self.rt.vectors.check_embedder(kb, self.rt.embedder, source)
        self.rt.embedder.embed_query("warm up")

    def run(self, question: str, session: str, kb: str, **callbacks):
        from executor.agent.session import run_turn
        from executor.nodes.state import Context

        context = Context(kb=kb, lookup_budget=self.rt.settings.lookup_budget)
        self._warn_lost_conversation(session)
        return run_turn(
            self.app,
            question,
            session,
            context,
            self.mode,
            max_query_chars=self.rt.settings.max_query_chars,
            **callbacks,
        )

    def _warn_lost_conversation(self, session: str) -> None:
        """One stderr line when a session the action memory knows has no conversation in the checkpoints (the
        file emptied, replaced or moved away): the turn starts the conversation over, which must not pass
        unnoticed. Its lookups still count: what was sent is not sent again. After the first turn the conversation
        is there again, so it is said once."""
        from langchain_core.runnables import RunnableConfig

        config: RunnableConfig = {"configurable": {"thread_id": session}}
        if self.app.get_state(config).values.get("messages") or not self.rt.memory.lookups(session):
            return
        settings = self.rt.settings  # a checkpoint URL may hold a password: it is named, not printed
        where = "the Postgres checkpoint database" if settings.checkpoint_url else settings.home / "checkpoints.sqlite"
        warn(
            f"session {session}'s conversation is not in {where} although its lookups are in executor.db: it "
            "starts over (restore the checkpoints from a backup to resume it)"
        )

    def cancel(self, session: str) -> None:
        from executor.agent.session import close_cancelled_turn

        close_cancelled_turn(self.app, session)

    def close(self) -> None:
        self.rt.close()

    def __enter__(self) -> Turns:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def ask(
    question: Annotated[str, typer.Argument(help="the question")],
    session: SessionOpt = None,
    kb: KbOpt = "sample",
    as_json: JsonOpt = False,
):
    """Answer one question through the executor graph (LLM if configured, else offline)."""
    session = session_or_new(session, "ask")
    streamed: list[str] = []
    with Turns("ask") as turns:
        turns.check_kb(kb)
        if as_json:
            result = turns.run(question, session, kb)
        else:
            result = turns.run(question, session, kb, on_update=LiveTrace(), on_token=_echo_into(streamed))
    warn_damaged_graph(e.get("graph_damaged") for e in result.trace)
    if as_json:
        print_json(result.model_dump())
        return
    if streamed:
        typer.echo("")
    elif console.is_terminal:  # a person reads it: Markdown rendered; a pipe gets the text as written
        from rich.markdown import Markdown

        console.print(Markdown(terminal_safe(result.answer)))
    else:
        echo(result.answer)
    print_summary(result)


def _echo_into(streamed: list[str]):
    """An on_token callback that prints the answer as it streams (LLM mode) and remembers that it did."""

    def token(text: str) -> None:
        streamed.append(text)
        echo(text, nl=False)

    return token
