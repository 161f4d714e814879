"""begin_turn: a new user message resets the turn's counters; the session's memory is reloaded."""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from agent.state import TURN_RESET, ExecutorState
from nodes.common import last_question, session_of


def make_begin_turn(rt):
    def begin_turn(state: ExecutorState, config: RunnableConfig) -> ExecutorState:
        session = session_of(config)
        return {
            **TURN_RESET,
            "question": last_question(state),
            "session_memory": rt.memory.by_domain(session),
            "domain_levels": rt.memory.domain_levels(session),
        }

    return begin_turn
