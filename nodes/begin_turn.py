"""begin_turn: a new user message resets the turn's part of the state; the session's part stays."""

from __future__ import annotations

from nodes.common import last_question
from nodes.state import TURN_RESET, ExecutorState


def begin_turn(state: ExecutorState) -> ExecutorState:
    return {**TURN_RESET, "question": last_question(state)}
