"""A cancel of a request the host has not sent is ignored where messages come in order (hostile17 finding 14):
kept, it made the later request under that id forget its records when it was answered, and the same lookup next in
the session sent the page again (PRECISE, not DEDUPED). Over HTTP a cancel may overtake its request (two POSTs):
there it holds for a request that comes within `Cancels.EARLY_S`."""

import time

from executor.agent.mcp_server import Cancels


def test_a_cancel_before_its_request_is_ignored():
    cancels = Cancels()
    assert cancels.cancel(7) is None  # no request 7 yet: nothing to cancel
    cancels.received(7)
    forgotten = []
    # request 7 runs to its end, answered: its records stay
    assert cancels.finished(7, lambda: forgotten.append(7)) is False
    assert forgotten == []


def test_a_cancel_of_a_request_in_progress_or_ended_still_forgets_its_call():
    cancels = Cancels()
    cancels.received(1)
    assert cancels.cancel(1) is None  # running: it forgets its records when it ends
    assert cancels.finished(1, lambda: None) is True
    cancels.received(2)
    forgotten = []
    assert cancels.finished(2, lambda: forgotten.append(2)) is False
    forget = cancels.cancel(2)  # ended before the cancel came: what forgets it is handed back
    assert forget is not None
    forget()
    assert forgotten == [2]


def test_over_http_a_cancel_that_overtook_its_request_cancels_it():
    cancels = Cancels(early_s=Cancels.EARLY_S)
    assert cancels.cancel(3) is None  # the cancel's POST was served first
    cancels.received(3)
    assert cancels.finished(3, lambda: None) is True  # its call forgets its records: the host never reads them


def test_over_http_a_cancel_long_before_its_request_is_ignored(monkeypatch):
    cancels = Cancels(early_s=Cancels.EARLY_S)
    now = time.monotonic()
    monkeypatch.setattr(time, "monotonic", lambda: now)
    assert cancels.cancel(4) is None
    monkeypatch.setattr(time, "monotonic", lambda: now + Cancels.EARLY_S + 1)
    cancels.received(4)
    assert cancels.finished(4, lambda: None) is False  # answered and read: its records stay
