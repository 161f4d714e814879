"""Round eight of the hostile pass (issue 30): the round-seven leftovers. A threshold of 0 (or below 0, or above 1)
in config.yaml is bad input naming the key and the file."""

import re

import pytest
from conftest import run_cli

NESTED = "retrieval:\n  normalization:\n"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("highly_relevant_threshold: 0\n", "highly_relevant_threshold"),
        ("reference_threshold: 0\n", "reference_threshold"),
        ("repeat_overlap_threshold: 0\n", "repeat_overlap_threshold"),
        ("entity_fuzzy_cutoff: 0\n", "entity_fuzzy_cutoff"),
        ("entity_embedding_threshold: 0.0\n", "entity_embedding_threshold"),
        (NESTED + "    reference-threshold: 0\n", "retrieval.normalization.reference-threshold"),
        (NESTED + "    supplement-threshold: -0.2\n", "retrieval.normalization.supplement-threshold"),
        (
            NESTED + "    embedders:\n      use-multilingual-v3: {highly-relevant-threshold: 1.5}\n",
            "retrieval.normalization.embedders.use-multilingual-v3.highly-relevant-threshold",
        ),
        (
            "retrieval:\n  repeats:\n    embedders:\n      use-multilingual-v3: {overlap-threshold: 0}\n",
            "retrieval.repeats.embedders.use-multilingual-v3.overlap-threshold",
        ),
    ],
    ids=lambda v: None if v.endswith("\n") else v,
)
def test_a_threshold_of_zero_or_out_of_range_in_config_yaml_is_bad_input_naming_key_and_file(tmp_path, text, key):
    config = tmp_path / "config.yaml"
    config.write_text(text)
    r = run_cli(tmp_path / "home", "kb", "list", EXECUTOR_CONFIG=str(config))
    assert r.returncode == 2, (r.returncode, r.stdout[:300], r.stderr[-300:])
    assert f"{config} ({key})" in r.stderr and r.stderr.count("\n") == 1, r.stderr
    config.write_text(re.sub(r"(?<=: )(-0\.2|1\.5|0\.0|0)(?=[\s}])", "0.5", text))  # the same key, in range
    ok = run_cli(tmp_path / "home", "kb", "list", EXECUTOR_CONFIG=str(config))
    assert ok.returncode == 0, ok.stderr
