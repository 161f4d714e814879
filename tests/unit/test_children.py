"""How `executor` starts child processes: never by a fork that runs gRPC's fork handlers.

With pymilvus's channels open, gRPC 1.80-1.83 crash a forked child before its exec now and then (grpc/grpc#43055;
docs/reliability.md, session 26). `subprocess` forks instead of using vfork when given `preexec_fn`, `user`,
`group` or `extra_groups`; multiprocessing's "fork" start method forks too."""

import ast
from pathlib import Path

import pytest

import executor

FORKING_ARGUMENTS = {"preexec_fn", "user", "group", "extra_groups"}


def calls_that_fork(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = ast.unparse(node.func)
        if name in ("os.fork", "os.forkpty"):
            found.append(name)
        if any(k.arg in FORKING_ARGUMENTS for k in node.keywords) and (
            "Popen" in name or name.startswith("subprocess")
        ):
            found.append(f"{name}({', '.join(k.arg for k in node.keywords if k.arg in FORKING_ARGUMENTS)}=...)")
        if name.endswith("get_context") and any(isinstance(a, ast.Constant) and a.value == "fork" for a in node.args):
            found.append(f'{name}("fork")')
    return found


@pytest.mark.parametrize("root", [Path(executor.__file__).parent, Path(__file__).parents[1]], ids=["executor", "tests"])
def test_no_module_starts_a_child_by_forking(root):
    # the tests too: a test's pytest process holds pymilvus's channels (conftest.launched starts a child otherwise)
    forking = {str(p.relative_to(root)): calls for p in root.rglob("*.py") if (calls := calls_that_fork(p.read_text()))}
    assert forking == {}


def test_the_check_sees_each_way_of_forking():
    source = """
import os, subprocess, multiprocessing
subprocess.run(["x"], preexec_fn=os.setsid)
subprocess.Popen(["x"], group=0)
os.fork()
multiprocessing.get_context("fork")
subprocess.run(["x"], start_new_session=True, umask=0o077)
multiprocessing.get_context("spawn")
"""
    assert calls_that_fork(source) == [
        "subprocess.run(preexec_fn=...)",
        "subprocess.Popen(group=...)",
        "os.fork",
        'multiprocessing.get_context("fork")',
    ]
