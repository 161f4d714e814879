"""The eval suites and benchmarks."""

from pathlib import Path

# where the suites' scenarios and labels sit (`REPO_ROOT / "evals"`: the checkout, or site-packages for a wheel);
# a review session's `corpus` is relative to it
REPO_ROOT = Path(__file__).resolve().parents[1]
