"""Near-field off-topic questions on a KB nobody labelled find nothing (issue 27), when the only word that tells
them apart from the KB's own subjects is a product the pages name in passing or a file they never name:

- a product written only inside a compound of the prose ("modelled on Flask-Login"): every word of "How long does
  a Flask session last?" is known to the KB, so the answerability model saw an on-field question; the name is now
  used in passing (`vocabulary.passing_names`), and self-calibration asks its off-topic questions on the names of
  the prose too (`self_calibration.mentioned`: this KB links to nothing, so the gate had learnt nothing of them);
- a file name the KB never uses ("refresh poetry.lock"), like an identifier it lacks (`vocabulary.unknown_names`).

A question naming a page's heading and such a product is at most a REFERENCE (it was PRECISE), and a question on a
page's own subject still gets its page. Real Milvus Lite and the shipped embedder, through the
command line."""

import json

import pytest
from test_self_calibration import ingest_team, team_lookup
from test_self_calibration_passing import WEB_PAGES

PAGES = {
    "web/sessions.md": (
        "# Sessions\n\nSessions are kept in a signed cookie; the signing key comes from the `SECRET_KEY` environment "
        "variable and rotating it logs every user out. Our login views are modelled on Flask-Login, which several "
        "of us used before.\n\n## Session lifetime\n\nA session expires after two weeks without a request; set "
        "`SESSION_MAX_AGE` in seconds to change it.\n"
    ),
    "web/dependencies.md": (
        "# Dependencies\n\nThe service pins every dependency in `requirements.txt`, compiled from "
        "`requirements.in` with `pip-compile`. To add a dependency, add it to `requirements.in`, compile again "
        "and commit both files.\n\n## Upgrading a dependency\n\nRun `pip-compile --upgrade-package NAME` and run "
        "the tests before merging.\n"
    ),
    **WEB_PAGES,
}


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    home = ingest_team(tmp_path_factory, PAGES)
    assert json.loads(home.joinpath("report.json").read_text())["calibration"]["stored"]
    return home


@pytest.mark.parametrize(
    "query",
    [
        "How long does a Flask session last?",
        "Flask 的会话有效期怎么设置？",
        "How do I add a dependency and update poetry.lock?",
    ],
)
def test_a_near_field_question_on_another_tool_finds_nothing(home, query):
    result = team_lookup(home, query)
    assert result["relevance_level"] == "NONE", result["primary"]
    assert result["primary"] == []


@pytest.mark.parametrize(
    "query, page",
    [
        ("How long does a session last before it expires?", "web/sessions.md"),
        ("How do I add a new dependency to the service?", "web/dependencies.md"),
        # a token the KB never writes that names no other product or file (`unknown_names` counts it, and
        # `unknown_products`, which the near-field questions teach, does not): still its page
        ("How do I upgrade a pure-Python dependency before merging?", "web/dependencies.md"),
        # a team's own service, named as its instance of what a page documents (`vocabulary.own_names`): no KB can
        # know the name, and the page answers the question all the same (Helm: "roll back the OrdersApi release"
        # was "nothing found", as if it named another product)
        ("How do I upgrade the OrdersApi dependency before merging?", "web/dependencies.md"),
        ("How long does our BillingService session last before it expires?", "web/sessions.md"),
    ],
)
def test_a_question_on_a_pages_own_subject_still_gets_its_page(home, query, page):
    result = team_lookup(home, query)
    assert result["relevance_level"] != "NONE", result["completeness_hint"]
    assert result["primary"][0]["doc_key"] == page


@pytest.mark.parametrize(
    "query", ["How do I set the session lifetime in Flask?", "Flask 里的 Session lifetime 怎么设置？"]
)
def test_a_question_naming_a_heading_and_a_product_the_kb_only_mentions_is_no_confident_answer(home, query):
    # it names the "Session lifetime" heading: the page agrees, but nothing in the KB documents Flask
    result = team_lookup(home, query)
    assert result["relevance_level"] in ("NONE", "REFERENCE"), result["primary"]
