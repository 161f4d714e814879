"""YAML anyone may have written is read within bounds (issue 30): no alias bomb, no RecursionError, no 100 MB value."""

import resource

import pytest

from executor.core import bounded_yaml
from executor.retrieval.documents import parse_text


def laughs(levels: int) -> str:
    """ "Billion laughs": each level a list of nine aliases of the one before (9^levels strings once expanded)."""
    return "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(levels - 1)
    )


LAUGHS = laughs(6)  # small enough that the loader of 112c0fb builds it (in seconds), and stores it


def test_an_alias_bomb_in_an_entity_record_is_a_warning_and_stays_small():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    text = "---\ntitle: Bomb\n" + LAUGHS + "entities: [*f]\n---\n# Bomb\n\nbody\n"
    doc = parse_text("bomb.md", text)
    assert doc.entities == [] and doc.title == "Bomb"
    assert any("aliases" in w for w in doc.warnings), doc.warnings
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000  # kB: nothing was expanded


def test_a_keyword_aliased_a_thousand_times_is_not_stored():
    big = "x" * 105_000
    text = f"---\ntitle: T\nbig: &big {big}\nkeywords: [{', '.join(['*big'] * 1000)}]\n---\nbody\n"
    doc = parse_text("k.md", text)
    assert sum(len(k) for k in doc.keywords) < 10_000 and doc.warnings


@pytest.mark.parametrize(
    "text", ["a: " + "[" * 10_000 + "]" * 10_000, "a:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 200))]
)
def test_deep_nesting_is_a_bound_error_not_a_recursion_error(text):
    with pytest.raises((bounded_yaml.YamlBoundError, bounded_yaml.yaml.YAMLError)):
        bounded_yaml.load(text, bounded_yaml.CONFIG)


def test_deep_front_matter_is_a_warning(tmp_path):
    for front in (
        "---\na: " + "[" * 10_000 + "]" * 10_000 + "\n---\n",
        "+++\na = " + "[" * 10_000 + "]" * 10_000 + "\n+++\n",
    ):
        doc = parse_text("deep.md", front + "# Deep\n\nbody\n")
        assert doc.title == "Deep" and doc.warnings


def test_config_aliases_are_allowed_within_bounds():
    data = bounded_yaml.load("base: &b {x: 1}\nother: *b\n", bounded_yaml.CONFIG)
    assert data == {"base": {"x": 1}, "other": {"x": 1}}
    with pytest.raises(bounded_yaml.YamlBoundError, match="expands"):
        bounded_yaml.load(laughs(9), bounded_yaml.CONFIG)


def test_ordinary_front_matter_still_reads():
    doc = parse_text(
        "ok.md", "---\ntitle: Fine\nkeywords: [a, b]\nentities: [{name: Redis, type: Database}]\n---\nbody\n"
    )
    assert (
        doc.title == "Fine" and doc.keywords == ["a", "b"] and doc.entities[0]["name"] == "Redis" and not doc.warnings
    )
