"""The eval suites and benchmarks."""

import os
from pathlib import Path

# where the suites' scenarios and labels sit (`REPO_ROOT / "evals"`: the checkout, or site-packages for a wheel);
# a review session's `corpus` is relative to it
REPO_ROOT = Path(__file__).resolve().parents[1]


def _helm() -> Path:
    """Helm's docs and labels (MIT): beside the checkout in the shared folder, never in the repository.
    `EXECUTOR_HELM_CORPUS` names another place; a clone elsewhere (CI's check in /tmp) looks in /work/shared."""
    if os.environ.get("EXECUTOR_HELM_CORPUS"):
        return Path(os.environ["EXECUTOR_HELM_CORPUS"])
    beside = REPO_ROOT.parent / "shared" / "corpora" / "helm"
    return beside if beside.is_dir() else Path("/work/shared/corpora/helm")


HELM = _helm()
