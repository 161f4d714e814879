"""Round seven of the hostile pass on `executor llm serve`: a multi-megabyte prompt (local processes may send
one; web pages are refused by Origin) is cut to what the context can hold before the engine counts it, instead
of the one engine tokenizing megabytes on every step of fitting it, for minutes."""

from __future__ import annotations

import httpx
import pytest
from test_local_llm import needs_model

pytestmark = needs_model


@pytest.fixture(scope="module")
def endpoint():
    from executor.core.settings import Settings
    from executor.local_llm.serve import LocalEndpoint, engine_options

    settings = Settings(local_model_threads=1, local_model_ctx=2048, local_model_max_tokens=16)
    with LocalEndpoint(engine_options(settings, "bundled")) as ep:
        yield ep


def test_a_multi_megabyte_prompt_is_cut_before_the_engine_counts_it_and_still_answers(endpoint, monkeypatch):
    engine = endpoint.service.engine
    counted: list[int] = []
    count = engine.count_tokens

    async def recording(text: str) -> int:
        counted.append(len(text))
        return await count(text)

    monkeypatch.setattr(engine, "count_tokens", recording)
    earlier = [{"role": "user", "content": "note " * 100_000}, {"role": "assistant", "content": "ok"}]
    body = {
        "model": endpoint.options.alias,
        "messages": [*earlier, {"role": "user", "content": "pool " * 500_000 + "\nWhat is the pool size?"}],
        "max_tokens": 4,
        "temperature": 0,
        "seed": 0,
    }
    response = httpx.post(f"{endpoint.base_url}/chat/completions", json=body, timeout=600)
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"] is not None
    prompt = endpoint.service.last_prompt
    assert prompt is not None and "[...]" in prompt  # the long turn was cut, not refused
    # what the engine was asked to count: a few context-sized prompts, never the 3 MB sent
    limit = engine.options.n_ctx * 32 * 2
    assert counted and max(counted) <= limit and sum(counted) <= 8 * limit, counted
