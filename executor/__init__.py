"""Executor: a LangGraph agent that answers from team knowledge bases and knows when to stop looking."""
