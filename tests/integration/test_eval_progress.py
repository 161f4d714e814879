"""`eval-retrieval` and `calibrate` show how far they are, as `executor ingest` does (hostile20 finding 6).

A team's label file of 100,000 questions (9 MB, under the 16 MB bound) graded for about three hours without a
word: no count, no estimate. On a terminal, stderr now carries tqdm's bar (questions done of all, and the time
left; then `calibrate`'s fits), while stdout, redirected as a script would (`--json > out.json`), stays the JSON
alone. Without a terminal (a pipe, a log file) nothing is drawn, as for ingest: a bar's frames there are noise.
"""

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

import pytest
from conftest import REPO, ingested_home, run_cli

from executor.retrieval.calibration import FOLDS, load_labels

SAMPLE_LABELS = REPO / "evals" / "labels" / "sample.yaml"


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return ingested_home(tmp_path_factory, "progress")


def run_in_terminal(home: Path, *args: str, timeout: int = 180) -> tuple[int, str, str]:
    """The command as a person runs it with stdout redirected to a file: stderr on a 120-column terminal.
    Returns (exit code, stdout, what the terminal received)."""
    master, slave = pty.openpty()
    # a pty opens 0 columns wide, where tqdm draws nothing; a terminal window has a width
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    env = {**os.environ, "EXECUTOR_HOME": str(home)}
    with tempfile.TemporaryFile("w+", encoding="utf-8") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "executor.cli.main", *args], stdout=out, stderr=slave, env=env, cwd=REPO
        )
        os.close(slave)
        shown = bytearray()
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                ready, _, _ = select.select([master], [], [], 1.0)
                if ready:
                    try:
                        chunk = os.read(master, 65536)
                    except OSError:  # EIO: nothing holds the terminal any more
                        break
                    if not chunk:
                        break
                    shown += chunk
                elif proc.poll() is not None:  # exited; a server it started may still hold the terminal
                    break
            code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        finally:
            if proc.poll() is None:
                proc.kill()
            os.close(master)
        out.seek(0)
        return code, out.read(), shown.decode("utf-8", errors="replace")


def frames(terminal: str, desc: str, unit: str) -> list[tuple[int, int]]:
    """(done, total) of every frame of the bar `desc` drew: `grading sample:  40%|███ | 36/91 [00:01<00:02,
    30.1question/s]`, the estimate `?` until the first rate is known."""
    bar = re.compile(
        rf"^{re.escape(desc)}: +\d+%\|[^|]*\| (\d+)/(\d+) \[\d\d:\d\d<(?:\?|\d\d:\d\d), +(?:\?|[\d.]+){unit}/s\]"
    )
    found = [bar.match(frame.strip("\n")) for frame in terminal.split("\r")]
    return [(int(m[1]), int(m[2])) for m in found if m]


# calibrate then runs the k-fold fits and the final one, which grow with the label set (7 s on 2,730 questions)
@pytest.mark.parametrize(
    ("command", "then"),
    [("eval-retrieval", []), ("calibrate", [("fitting", "fit", FOLDS + 1)])],
    ids=["eval-retrieval", "calibrate"],
)
def test_a_terminal_sees_the_questions_counted_while_stdout_stays_json(home, command, then):
    questions = len(load_labels(SAMPLE_LABELS))
    code, stdout, terminal = run_in_terminal(home, command, "--labels", str(SAMPLE_LABELS), "--json")
    assert code == 0, terminal[-2000:]
    data = json.loads(stdout)  # the bar went to the terminal only: the redirected stdout is the JSON alone
    assert data["labels"] == {str(SAMPLE_LABELS): questions}

    for desc, unit, total in [("grading sample", "question", questions), *then]:
        shown = frames(terminal, desc, unit)
        assert shown, f"no {desc!r} bar on the terminal: {terminal[-2000:]!r}"
        assert {of for _, of in shown} == {total}, shown  # done out of all of them
        assert all(done <= total for done, _ in shown), shown


def test_without_a_terminal_no_bar_is_drawn(home):
    """A pipe or a log file gets no bar frames, as with ingest; the JSON on stdout is unchanged."""
    r = run_cli(home, "eval-retrieval", "--labels", str(SAMPLE_LABELS), "--json")
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout)["labels"] == {str(SAMPLE_LABELS): len(load_labels(SAMPLE_LABELS))}
    assert "grading sample" not in r.stderr and "\r" not in r.stderr, r.stderr[-2000:]
