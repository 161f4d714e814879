"""An error code or key asked in the plural is the code the KB writes (hostile19 finding 14); a plain word's plural
is not read as its singular (tried in session 25: it cost pip and Linux)."""

from executor.retrieval.vocabulary import Vocabulary, query_terms

KB = Vocabulary.build(
    [
        ("err-timeout.md", "ERR_TIMEOUT: the upstream did not answer within the timeout. Raise the timeout."),
        ("pool.md", "The connection pool holds open connections; size it with max-pool-size."),
    ]
)


def test_a_code_in_the_plural_is_known_to_the_kb():
    q = query_terms("we see ERR_TIMEOUTS in prod", KB)
    assert q.unknown_names == [], q.unknown_names
    assert KB.known("max-pool-sizes")


def test_a_plain_word_or_an_unknown_code_in_the_plural_is_not():
    assert not KB.known("timeouts")  # the KB writes `timeout` only: a plain word keeps today's reading
    assert query_terms("ERR_DISK_FULLS", KB).unknown_names == ["ERR_DISK_FULLS"]


ACRONYMS = Vocabulary.build(
    [
        ("tracing.md", "Every entry carries the trace ID and the span ID of the request."),
        ("urls.md", "Links are written as plain text."),
    ]
)


def test_an_acronym_in_the_plural_is_the_acronym_the_kb_writes():
    """structlog: "attach the current trace and span IDs to every log entry" was "nothing found" with the page
    that answers it first, `IDs` read as a name the KB never uses."""
    assert query_terms("How do I attach trace and span IDs to every entry?", ACRONYMS).unknown_names == []


def test_an_acronym_the_kb_never_writes_is_unknown_in_the_plural_too():
    assert query_terms("How are the URLs signed?", ACRONYMS).unknown_names == ["URLs"]
