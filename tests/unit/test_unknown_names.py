"""Which words of a question are names the KB never uses (the answerability model's `unknown_names`).

A capital alone makes a name only mid-sentence, and only for a word that is neither common English (USE's
own lower-case vocabulary) nor a month or weekday; an underscore makes a name as a digit or a dash does, and a
file or host name (`poetry.lock`) is one too.
"""

from __future__ import annotations

import pytest

from executor.retrieval.vocabulary import Vocabulary, query_terms, unknown_names

KB = Vocabulary.build(
    [("a.md", "Helm hooks run jobs; hook-delete-policy"), ("b.md", "Helm charts and releases, see Chart.yaml")]
)


@pytest.mark.parametrize(
    "query, names",
    [
        ("Does Helm work with Terraform and k8s?", ["Terraform", "k8s"]),  # unknown product, digit
        ("Can I pin the version with cert-manager here?", ["cert-manager"]),  # a dash
        ("Redis 缓存怎么配置", ["Redis"]),  # Latin script inside Chinese
        ("How do I raise max_connections for the release?", ["max_connections"]),  # an underscore
        ("Which weekday was release R3 cut on?", ["R3"]),  # the first word of the question is no name
        ("My charts fail. Terraform keeps the old state?", []),  # nor the first word after a full stop
        ("Where do I set the Bonus Rate for jobs?", []),  # capitalised common English words
        ("What changed in the hooks since January?", []),  # a month
        ("Do hooks run on Sunday or Mon by default?", []),  # a weekday and its short form
        ("Is the Grafana dashboard for releases kept?", ["Grafana"]),  # mid-sentence, no English word
        ("Why do hooks fail when run non-interactively?", []),  # an English word with a dashed prefix
        ("Do re-signed charts keep their releases?", []),
        ("Can pre-commit-hooks check the chart?", ["pre-commit-hooks"]),  # two dashes: a name
        ("Do I refresh poetry.lock and environment.yml after a release?", ["poetry.lock", "environment.yml"]),
        ("Does Node.js run the hooks, e.g. on release?", ["Node.js"]),  # a file or host name; `e.g` is none
        ("Is chart.yaml read before the hooks?", []),  # a file name the KB uses
    ],
)
def test_unknown_names(query, names):
    assert unknown_names(query, KB) == names


def test_a_word_the_kb_uses_is_never_unknown():
    assert unknown_names("Does the Helm_hooks page cover Hook-delete-policy?", KB) == ["Helm_hooks"]


@pytest.mark.parametrize(
    "query, products",
    [
        ("Does Helm work with Terraform and k8s?", ["Terraform"]),  # a product; `k8s` is a value-like token
        ("Do I refresh poetry.lock and environment.yml after a release?", ["poetry.lock", "environment.yml"]),
        ("Is RabbitMQ 的 hooks 怎么配置", ["RabbitMQ"]),
        # tokens the KB never writes that name no other product or file: a user's answerable question has them
        ("My version is stored as BUILD = b1.2, can hooks read it?", []),
        ("Which modem settings suit agetty dial-in for releases?", []),
        ("Does a pure-Python chart need hooks?", []),
        ("Can I pass settings to systemd-run from a hook?", []),
    ],
)
def test_unknown_products_are_the_unknown_names_of_another_product_or_file(query, products):
    assert query_terms(query, KB).unknown_products == products


# titles and headings name what the pages document: `release`, `chart`, `deployment`, `hooks`
DOCUMENTED = Vocabulary.build(
    [
        ("a.md", "Helm hooks run jobs before a release; hook-delete-policy"),
        ("b.md", "Roll back a release to a previous revision. A chart holds a deployment."),
    ],
    subjects=["Helm hooks", "Rolling back a release", "Charts", "Deployment"],
)


@pytest.mark.parametrize(
    "query, own, unknown",
    [
        # a team's own service or release, named as its instance of what the KB documents
        ("How do I roll back the OrdersApi release?", ["OrdersApi"], []),
        ("my payments-svc chart fails with a hook error", ["payments-svc"], []),
        ("Our BillingService deployment is stuck", ["BillingService"], []),
        ("我们的 OrdersApi release 怎么回滚？", ["OrdersApi"], []),
        # another product as the tool or the subject of the question: still a name the KB never uses
        ("How do I configure Kafka consumer groups?", [], ["Kafka"]),
        ("How do I run hooks with Terraform?", [], ["Terraform"]),
        ("Where does Terraform fit into a release?", [], ["Terraform"]),
        # an owner and a name, but no word the KB documents after it
        ("Why is the OrdersApi broker slow?", [], ["OrdersApi"]),
        # another stack's product before a word the KB documents: its one-word name, or a word and an acronym
        ("How do I roll back the Istio release?", [], ["Istio"]),
        ("How do I tune the MongoDB deployment?", [], ["MongoDB"]),
    ],
)
def test_a_name_of_the_users_own_thing_is_no_unknown_name(query, own, unknown):
    terms = query_terms(query, DOCUMENTED)
    assert (terms.own_names, terms.unknown_names) == (own, unknown)


def test_a_question_naming_its_own_release_weighs_as_one_naming_none():
    named = query_terms("How do I roll back the OrdersApi release?", DOCUMENTED)
    plain = query_terms("How do I roll back the release?", DOCUMENTED)
    assert (named.weights, named.coverage) == (plain.weights, plain.coverage)
