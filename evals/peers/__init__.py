"""The agents users would build instead of Executor, over the same knowledge base and Milvus collection.

One module per agent (`executor`, `react`, `agentic_rag`), each with `run_session(...)`, which runs one
scenario's turns as one session and returns a `Turn` per question; `common` holds what they share: the
retriever tool, the scripted rephrasing policy, the LLM-call counter. `evals.bench_peers` measures them.
"""
