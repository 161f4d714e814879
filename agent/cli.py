"""The `executor` command line. Every command has `--json`; errors are one line on stderr, exit 2."""

from __future__ import annotations

import typer

from agent.commands import evaluation, feedback, graph, kb, knowledge, llm, mcp, repeats, retrieval_quality, turns

app = typer.Typer(no_args_is_help=True, add_completion=False, help="Answers from team knowledge bases, without the retrieval loop.")
app.command()(knowledge.ingest)
app.command()(knowledge.lookup)
app.command()(turns.ask)
app.command()(turns.chat)
app.command("eval")(evaluation.eval_)
app.command()(kb.kg)
app.command()(evaluation.stats)
app.command()(retrieval_quality.calibrate)
app.command("eval-retrieval")(retrieval_quality.eval_retrieval)
app.command("calibrate-repeats")(repeats.calibrate_repeats)
app.command()(feedback.feedback)
app.command()(mcp.mcp)
app.add_typer(knowledge.session_app, name="session")
app.add_typer(graph.graph_app, name="graph")
app.add_typer(kb.kb_app, name="kb")
app.add_typer(llm.llm_app, name="llm")

if __name__ == "__main__":  # pragma: no cover
    app()
