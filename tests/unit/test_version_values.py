"""A version or number a question gives as an example (`1.x`, `v1.2.3`, `release-1.2.3`, `8080`) is a value, not a
name the KB never uses: counted as one, it made an answerable question on a versioning tool's docs "nothing found"
with its page first (bump-my-version, "How do I keep a floating v1 tag that always points at the newest 1.x
release?"). Names with a digit stay names."""

import pytest

from executor.retrieval.vocabulary import Vocabulary, unknown_names

KB = Vocabulary.build([("tags.md", "A movable tag follows the newest release; set the tag name template.")])


@pytest.mark.parametrize(
    "query",
    [
        "How do I keep a floating v1 tag that always points at the newest 1.x release?",
        "I want the tag to read release-1.2.3 rather than v1.2.3.",
        "Does the release 2.0.0-rc1 keep its tag on port 8080?",
    ],
)
def test_a_version_or_number_is_no_unknown_name(query):
    assert unknown_names(query, KB) == []


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("Does the tag work with k8s and log4j?", ["k8s", "log4j"]),
        ("Is the release tag written as utf-8 or sha-256?", ["utf-8", "sha-256"]),
    ],
)
def test_a_name_with_a_digit_stays_a_name(query, names):
    assert unknown_names(query, KB) == names
