"""Which names of a question the KB mentions only in passing (the answerability model's `passing_names`), and the
off-topic questions self-calibration asks about the products a KB only links to (`self_calibration.mentioned`).

A KB documents what its titles, headings, keywords and code name; a product it names only in prose (a list of
other frameworks, a link, a quoted endorsement) is mentioned, not documented.
"""

from __future__ import annotations

from executor.core.relevance import language_of
from executor.retrieval.self_calibration import Source, mentioned
from executor.retrieval.vocabulary import Vocabulary, passing_names, subject_texts

CHUNKS = [
    ("db.md", "Databases › Migrations\nRun `svc migrate` on deploy. Other ORMs: [Django](https://djangoproject.com)."),
    ("db.md", "Databases › Pooling with SQLAlchemy\nThe pool holds 10 connections."),
    ("ctx.md", "Context\nSee `contextvars.ContextVar` and the Grafana board. It is OK to use it."),
]
KB = Vocabulary.build(
    [(k, text) for k, text in CHUNKS], [s for _, text in CHUNKS for s in subject_texts(text)] + ["svc-cli"]
)


def test_a_name_only_prose_uses_is_passing_one_a_heading_or_code_names_is_not():
    assert passing_names("How do I write a Django data migration?", KB) == ["Django"]
    assert passing_names("Django 的数据迁移怎么写？", KB) == ["Django"]  # Latin script inside Chinese is a name
    assert passing_names("How big is the pool with SQLAlchemy?", KB) == []  # in a heading
    assert passing_names("Why does my ContextVar lose its value?", KB) == []  # in code
    assert passing_names("Is the Grafana board kept?", KB) == ["Grafana"]
    assert passing_names("Is there one pool per SQLAlchemys engine?", KB) == []  # the plural of a heading's word
    assert passing_names("Is it OK to migrate on deploy?", KB) == []  # an acronym names no product
    assert passing_names("Does Terraform work here?", KB) == []  # never used: an unknown name, not a passing one


def test_a_vocabulary_built_without_subjects_cannot_tell():
    bare = Vocabulary.build([(k, text) for k, text in CHUNKS])
    assert passing_names("How do I write a Django data migration?", bare) == []


def test_the_kb_asks_off_topic_questions_on_the_products_it_only_links_to():
    body = (
        "Other frameworks: [Django](https://www.djangoproject.com/), see [Migrations](migrations.md) and "
        "[SQLAlchemy](https://www.sqlalchemy.org/)."
    )
    questions = mentioned([Source("db.md", "Databases", [], [], body)], KB)
    # Django: linked, never a subject; SQLAlchemy: a heading names it; Migrations: a link to a page of the KB. One
    # product: asked in every template, in both languages, each on the linking page's subject
    assert len(questions) == 6 and all("Django" in q for q in questions)
    assert sum(language_of(q) == "zh" for q in questions) == 3
    assert all("Databases" in q or "数据库" in q for q in questions)
