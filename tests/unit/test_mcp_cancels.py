"""A cancel of a request the host has not sent is ignored (hostile17 finding 14): kept, it made the later request
under that id forget its records when it was answered, and the same lookup next in the session sent the page
again (PRECISE, not DEDUPED)."""

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
