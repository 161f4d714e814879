"""`executor feedback SESSION TURN good|bad`: a verdict on an answer, for scripts (chat has /good and /bad)."""

from __future__ import annotations

from typing import Annotated

import typer

from executor.cli.commands.common import JsonOpt, print_json, runtime


def feedback(
    session: Annotated[str, typer.Argument(help="the session id the answer was given in")],
    turn: Annotated[str, typer.Argument(help="which answer: 1 for the session's first question, or 'last'")],
    verdict: Annotated[str, typer.Argument(help="good or bad")],
    note: Annotated[str | None, typer.Option("--note", help="what was wrong (or right)")] = None,
    as_json: JsonOpt = False,
):
    """Say whether an answer was good or bad; kept with its question, levels and documents for calibration."""
    with runtime() as rt:
        row = rt.feedback.record(session, turn, verdict, note)
    out = {
        "session": row.session_id,
        "turn": row.turn,
        "verdict": row.verdict,
        "note": row.note,
        "query": row.query,
        "kb": row.kb,
        "levels": row.levels,
        "documents": row.documents,
        "cited": row.cited,
    }
    if as_json:
        print_json(out)
        return
    typer.echo(
        f"recorded {row.verdict} for turn {row.turn} of {row.session_id}: {row.query} "
        f"({len(row.documents)} documents, {len(row.cited)} cited)"
    )
