"""Which names of a question the KB mentions only in passing (the answerability model's `passing_names`), and the
off-topic questions self-calibration asks about the products a KB only links to (`self_calibration.mentioned`).

A KB documents what its titles, headings, keywords and code name; a product it names only in prose (a list of
other frameworks, a link, a quoted endorsement) is mentioned, not documented.
"""

from __future__ import annotations

import json

from executor.core.relevance import language_of
from executor.retrieval.self_calibration import Source, mentioned
from executor.retrieval.vocabulary import Vocabulary, passing_names, subject_texts

CHUNKS = [
    ("db.md", "Databases › Migrations\nRun `svc migrate` on deploy. Other ORMs: [Django](https://djangoproject.com)."),
    ("db.md", "Databases › Pooling with SQLAlchemy\nThe pool holds 10 connections."),
    ("ctx.md", "Context\nSee `contextvars.ContextVar` and the Grafana board. It is OK to use it."),
    (
        "forms.md",
        "Forms\nModeled on the excellent Flask-WTF library; `pydantic-settings` reads the form's config. "
        "Clocks are kept by systemd-timesyncd.",
    ),
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


def test_a_name_the_kb_writes_only_inside_a_compound_is_used_in_passing_too():
    # `Flask` only in the prose's "Flask-WTF"; `pydantic` only in the code's `pydantic-settings`
    assert passing_names("How do I register a blueprint in a Flask application?", KB) == ["Flask"]
    assert passing_names("Flask 怎么配置连接池？", KB) == ["Flask"]
    assert passing_names("Where does Pydantic read the form's config from?", KB) == []
    # a compound's tail is its head's own part: `systemd-timesyncd` is a part of systemd, not a name in passing
    assert passing_names("Where does Timesyncd get its servers?", KB) == []


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


def test_the_kb_asks_them_on_the_names_its_prose_mentions_too_when_it_links_to_nothing():
    body = "Our form views are modelled on Flask-WTF, which several of us used before. Run `svc migrate` first."
    questions = mentioned([Source("forms.md", "Forms", [], [], body)], KB)
    # `Flask`: the head of a compound of the prose, never a subject (`svc` is code, `WTF` an acronym)
    assert questions and all("Flask" in q for q in questions)
    assert all("Forms" in q or "表单" in q for q in questions)


def test_a_term_a_list_item_defines_is_documented_a_linked_or_bare_one_is_not():
    text = (
        "California housing\n:Attribute Information:\n    - MedInc        median income in block group\n"
        "- [Django](https://www.djangoproject.com/) - a web framework that reads such tables\n"
        "Tables load in this order:\n- HouseAge\n- AveRooms\n"
    )
    kb = Vocabulary.build([("housing.md", text)], subject_texts(text))
    assert passing_names("What does the MedInc column mean in the housing table?", kb) == []
    assert passing_names("How do I load the housing table with Django?", kb) == ["Django"]
    assert passing_names("Is the AveRooms table loaded first?", kb) == ["AveRooms"]  # a bare item only enumerates


def test_a_pages_file_name_names_its_subject():
    # a plain-text page: no heading, and a first line that is no title
    text = "@(#)README 5.1\ncol - filter out reverse line feeds. The default col compresses spaces to tabs."
    kb = Vocabulary.build([("util-linux-col.md", text)], ["@(#)README 5.1"])
    assert passing_names("col 命令默认会把空格压缩成制表符吗？", kb) == []


def test_a_vocabulary_cached_by_code_that_read_subjects_otherwise_is_rebuilt(tmp_path):
    path = tmp_path / "vocabulary-team.json"
    KB.save(path, "v1")
    assert Vocabulary.load(path, "v1") == KB
    older = json.loads(path.read_text(encoding="utf-8"))
    del older["format"]  # as the code before wrote it: its subjects lack list terms and file names
    path.write_text(json.dumps(older), encoding="utf-8")
    assert Vocabulary.load(path, "v1") is None
