"""A near-field question on a product the KB only mentions in passing finds nothing (issue 27): a page that lists
Django among other ORMs documents nothing of it, though every word of "How do I write a Django data migration?" is
known to the KB and its meaning is close to the page on migrations. Self-calibration asks the KB's own off-topic
questions about the products it only links to (`self_calibration.mentioned`), so its answerability model learns
what `passing_names` means there; a question on a page's real subject still gets its page. Real Milvus Lite and the
shipped embedder, through the command line."""

import json

import pytest
from test_self_calibration import ingest_team, team_lookup

# pages of a small web service's docs that test_off_topic_near_field.py shares
WEB_PAGES = {
    "web/routing.md": (
        "# Routing\n\nRoutes are declared in `routes.py` as a list of paths and handlers. A path parameter such as "
        "`/users/{id}` is passed to the handler as a keyword argument.\n\n## Mounting sub-applications\n\nA "
        "sub-application is mounted under a prefix and sees paths relative to it.\n"
    ),
    "web/middleware.md": (
        "# Middleware\n\nMiddleware wraps every request: it runs before the handler and after the response is "
        "built. The order in the settings is the order in which requests pass through it.\n\n## Timing requests\n\n"
        "The timing middleware adds a `Server-Timing` header with the handler's duration.\n"
    ),
    "web/testing.md": (
        "# Testing\n\nThe test client sends requests to the application in-process, without a server. Fixtures "
        "create a fresh database for each test module and drop it afterwards.\n\n## Testing websockets\n\nOpen a "
        "websocket with the client's `websocket_connect` and send and receive messages in the test.\n"
    ),
    "web/deploy.md": (
        "# Deploying the service\n\nThe pipeline builds an image, runs the tests, migrates the database and rolls "
        "the new image out host by host. Watch the error rate during the roll-out.\n\n## Rolling back\n\nRun the "
        "rollback job with the previous image tag; migrations are not rolled back.\n"
    ),
    "web/static-files.md": (
        "# Static files\n\nStatic files are served from the `static/` folder under the `/static` path, with a "
        "cache header of one day. In production a CDN serves them instead.\n"
    ),
}

PAGES = {
    "web/databases.md": (
        "# Databases\n\nThe service keeps its data in Postgres and talks to it through the async driver. Every "
        "request borrows a connection from the pool and returns it when the response is sent.\n\n## Schema "
        "migrations\n\nSchema migrations live in the `migrations/` folder, one numbered SQL file each, and are "
        "applied in order by `svc migrate` during every deploy. A migration that fails stops the deploy.\n\n## "
        "Coming from other stacks\n\nWe use no ORM. Teams coming from other stacks sometimes ask about these:\n\n"
        "- [Django](https://www.djangoproject.com/) - a full-stack web framework with its own ORM.\n"
        "- [Peewee](https://docs.peewee-orm.com/) - a small ORM.\n"
        "- [Pony](https://ponyorm.org/) - an ORM that writes queries as generators.\n"
    ),
    "web/sessions.md": (
        "# Sessions\n\nSessions are kept in a signed cookie; the signing key comes from the `SECRET_KEY` "
        "environment variable and rotating it logs every user out.\n\n## Session lifetime\n\nA session expires "
        "after two weeks without a request.\n"
    ),
    **WEB_PAGES,
}


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    home = ingest_team(tmp_path_factory, PAGES)
    assert json.loads(home.joinpath("report.json").read_text())["calibration"]["stored"]
    return home


@pytest.mark.parametrize("query", ["How do I write a Django data migration?", "Django 的数据迁移怎么写？"])
def test_a_question_on_a_product_the_kb_only_lists_finds_nothing(home, query):
    result = team_lookup(home, query)
    assert result["relevance_level"] == "NONE", result["primary"]
    assert result["primary"] == []


def test_a_question_on_a_pages_own_subject_still_gets_its_page(home):
    result = team_lookup(home, "How are schema migrations applied when we deploy?")
    assert result["relevance_level"] != "NONE", result["completeness_hint"]
    assert result["primary"][0]["doc_key"] == "web/databases.md"
