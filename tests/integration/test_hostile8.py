"""Round eight of the hostile pass (issue 30): the round-seven leftovers. A threshold of 0 (or below 0, or above 1)
in config.yaml is bad input naming the key and the file; a page in Latin-1 or in UTF-16 without a BOM is read in its
charset, while binary is still refused."""

import json
import re
from pathlib import Path

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


MENU = (
    "# Café menu\n\nThe frobnicator café opens at nine. Its crème brûlée comes à la carte, with a déjà vu\n"
    "discount for naïve façade painters. Orders are taken at the counter until five in the afternoon, and the\n"
    "kitchen closes when the last frobnicator leaves the building for the evening.\n"
)
RUNBOOK = (
    "# Gateway runbook\n\nRestart the quuxgateway when ERR_QUUX_TIMEOUT appears in its log; the pool\n"
    "drains within thirty seconds and new requests go to the standby node.\n"
)


def _primary(home, query: str) -> dict:
    r = run_cli(home, "lookup", "--kb", "enc", "--json", query)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["primary"][0]


def test_latin1_and_bomless_utf16_pages_are_read_in_their_charset_and_binary_is_still_refused(tmp_path):
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "menu.md").write_bytes(MENU.encode("latin-1"))  # read as cp1257 before: "Crčme brūlée ą la carte"
    (kb / "runbook.md").write_bytes(RUNBOOK.encode("utf-16-le"))  # no BOM: refused as binary before
    (kb / "noise.md").write_bytes(Path("/bin/ls").read_bytes()[:200_000])
    home = tmp_path / "home"
    r = run_cli(home, "ingest", str(kb), "--kb", "enc", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["documents"] == 2, report
    assert report["warnings"] == ["noise.md: binary content (an executable), not text; skipped"], report
    menu = _primary(home, "frobnicator café crème brûlée")
    assert menu["doc_key"] == "menu.md" and menu["title"] == "Café menu", menu
    assert "café opens" in menu["content"] and "crème brûlée comes à la carte" in menu["content"], menu
    runbook = _primary(home, "quuxgateway ERR_QUUX_TIMEOUT")
    assert runbook["doc_key"] == "runbook.md" and "Restart the quuxgateway" in runbook["content"], runbook


@pytest.mark.parametrize(
    ("text", "charset"),
    [
        (
            "# Instruções\n\nA configuração não está correta. Verifique a conexão e a opção de segurança.\n" * 2,
            "latin-1",
        ),
        ("# Runbook\n\nRestart the gateway when ERR_TIMEOUT appears.\n" * 3, "utf-16-be"),
        ("# 运维手册\n\n当出现超时错误时重启网关。数据库连接池耗尽。\n" * 3, "utf-16-le"),
        # fewer undecodable bytes than 1 in 100: read as UTF-8 with stray bytes before, "caf\ufffd"
        (
            "# Menu\n\nA long line about the opening hours, the counter, the kitchen and the staff, then one café.\n"
            * 4,
            "latin-1",
        ),
    ],
    ids=["portuguese-latin1", "ascii-utf16be", "chinese-utf16le", "one-accent-per-line-latin1"],
)
def test_text_in_another_charset_decodes_to_what_was_written(text, charset):
    from executor.retrieval.converters import decode_text

    assert decode_text(text.encode(charset)) == text
