"""Round seven of the hostile pass on the command line: a knowledge base typed wrong in `kg --kb` is bad input
(exit 2, named) before anything is queried, as for every other command; a negative number where an argument is
expected says how to pass it."""

import pytest
from conftest import ingested_home, run_cli


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return ingested_home(tmp_path_factory, "hostile7-cli")


def test_kg_with_an_unknown_knowledge_base_among_known_ones_is_bad_input(home):
    r = run_cli(home, "kg", "--kb", "sample,nope", "connection pool")
    assert r.returncode == 2, (r.returncode, r.stdout[:300])
    assert "unknown knowledge base 'nope'" in r.stderr and r.stdout == ""
    assert r.stderr.count("\n") == 1
    ok = run_cli(home, "kg", "--kb", "sample", "connection pool")
    assert ok.returncode == 0 and "results:" in ok.stdout


def test_a_negative_number_as_an_argument_says_to_put_double_dash_before_it(home):
    r = run_cli(home, "feedback", "s1", "-1", "good")
    assert r.returncode == 2 and "put -- before the arguments" in r.stderr, r.stderr
    after = run_cli(home, "feedback", "--", "s1", "-1", "good")
    assert after.returncode == 2 and "a turn is a number from 1" in after.stderr, after.stderr


@pytest.mark.parametrize("line", ["max_file_mb: true", "top_k: false", "graph_hops: yes"])
def test_true_or_false_in_config_yaml_where_a_number_is_asked_for_is_bad_input(home, tmp_path, line):
    config = tmp_path / "config.yaml"
    config.write_text(line + "\n")
    r = run_cli(home, "kb", "list", EXECUTOR_CONFIG=str(config))
    key = line.split(":")[0]
    assert r.returncode == 2 and f"{key} is a number" in r.stderr and str(config) in r.stderr, r.stderr
    config.write_text("self_calibrate: true\n")  # where true/false is the setting, it is one
    assert run_cli(home, "kb", "list", EXECUTOR_CONFIG=str(config)).returncode == 0
