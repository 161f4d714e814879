"""Run a benchmark on another commit's code, for a side-by-side "before" column.

The commit is exported with `git archive` into a temporary folder, the
current benchmark files are copied over it (so both sides measure the same
way), and `python -m evals.<bench> --no-baseline --json FILE` runs there in
a subprocess with that folder first on the path. Runs one after the other,
on the same machine; printed figures only, never asserted.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# main as it was before issue 17's per-turn and start-up work: the fixed point the ratios are measured against
BEFORE_ISSUE_17 = "0dc13db"


def code_env(src: Path) -> dict[str, str]:
    """The environment that makes `python -m executor.cli.main` (and every import) use the code in `src`."""
    return {**os.environ, "PYTHONPATH": str(src)}


def run_on(ref: str, bench_file: str, args: list[str]) -> dict | None:
    """The JSON `bench_file` writes when run on `ref`'s code; None (with the reason on stderr) when it cannot run."""
    module = f"evals.{Path(bench_file).stem}"
    with tempfile.TemporaryDirectory(prefix=f"{Path(bench_file).stem}-{ref}-") as tmp:
        src = Path(tmp) / "src"
        try:
            archive = subprocess.run(["git", "-C", str(REPO), "archive", ref], capture_output=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError) as exc:
            print(f"baseline {ref}: cannot export it from git ({exc}); no baseline", file=sys.stderr)
            return None
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(src, filter="data")
        for current in [*Path(__file__).parent.glob("bench_*.py"), Path(__file__)]:  # the benchmarks measure alike
            shutil.copy(current, src / "evals" / current.name)
        out = Path(tmp) / "baseline.json"
        cmd = [sys.executable, "-m", module, *args, "--no-baseline", "--json", str(out)]
        done = subprocess.run(cmd, cwd=src, env=code_env(src), capture_output=True, text=True)
        if done.returncode != 0:
            print(f"baseline {ref} failed: {(done.stderr or done.stdout).strip()[-400:]}", file=sys.stderr)
            return None
        return json.loads(out.read_text(encoding="utf-8"))["current"]
