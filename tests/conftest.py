import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.runtime import Runtime
from agent.settings import SAMPLE_KB_PATH, Settings
from retrieval.ingest import SAMPLE_EXTRACT_CONFIG, ingest

os.environ.setdefault("LANGSMITH_TRACING", "false")
REPO = Path(__file__).resolve().parents[1]


def make_runtime(home: Path, **overrides) -> Runtime:
    return Runtime(Settings(home=home, **overrides))


@pytest.fixture(scope="session")
def sample_rt(tmp_path_factory):
    """One runtime over a fresh home holding the ingested sample KB (real Milvus Lite, real USE)."""
    home = tmp_path_factory.mktemp("home")
    rt = make_runtime(home)
    ingest(rt, SAMPLE_KB_PATH, "sample", progress=False, extract_config=SAMPLE_EXTRACT_CONFIG)
    yield rt
    rt.close()


def run_cli(home: Path, *args: str, timeout: int = 180, **env_extra) -> subprocess.CompletedProcess:
    env = {**os.environ, "EXECUTOR_HOME": str(home), **env_extra}
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", *args], capture_output=True, text=True, env=env, timeout=timeout, cwd=REPO
    )


def write_kb(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root
