"""A library's logger that reports every retry through an outage is quieted (config/logs.py):
its first failure in full, then a count a minute, and in full again once an outage is over."""

from __future__ import annotations

import logging
import uuid

import pytest

from config.logs import QUIET_S, RepeatsQuieted


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


MESSAGE = "Unexpected exception in receive task"


def failure(message: str = MESSAGE, kind: type[Exception] = ConnectionError) -> logging.LogRecord:
    try:
        raise kind("Connection closed by server.")
    except kind as exc:
        return logging.LogRecord(
            "channels_redis.pubsub", logging.ERROR, __file__, 1, message, None,
            (type(exc), exc, exc.__traceback__),
        )  # fmt: skip


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def quieted(clock):
    return RepeatsQuieted(clock=clock)


def every_second(quieted, clock, seconds: int) -> list[logging.LogRecord]:
    """A failure a second, as the layer's reader retries; those let through."""
    through = []
    for _ in range(seconds):
        clock.now += 1
        record = failure()
        if quieted.filter(record):
            through.append(record)
    return through


def test_the_first_failure_goes_through_whole_and_its_repeats_as_a_count_a_minute(quieted, clock):
    through = every_second(quieted, clock, 150)
    assert len(through) == 3  # at 1 s, 61 s and 121 s
    first, *summaries = through
    assert first.exc_info is not None and first.getMessage() == MESSAGE
    for summary in summaries:
        assert summary.exc_info is None and summary.exc_text is None
        assert summary.getMessage() == f"{MESSAGE} (60 more since the last report)"


def test_a_failure_after_a_quiet_spell_is_a_new_outage_told_whole(quieted, clock):
    assert len(every_second(quieted, clock, 5)) == 1
    clock.now += QUIET_S
    again = every_second(quieted, clock, 5)
    assert len(again) == 1 and again[0].exc_info is not None


def test_other_messages_and_other_failures_are_told_on_their_own(quieted, clock):
    assert quieted.filter(failure("one"))
    assert quieted.filter(failure("another"))
    assert not quieted.filter(failure("one"))
    different = failure("one", kind=ValueError)  # a new fault under the outage's message
    assert quieted.filter(different) and different.exc_info is not None


def test_the_pubsub_layers_logger_is_quieted_as_configured(caplog):
    logger = logging.getLogger("channels_redis.pubsub")
    message = f"{MESSAGE} {uuid.uuid4()}"  # the configured filter lives as long as the process
    with caplog.at_level(logging.ERROR, logger="channels_redis.pubsub"):
        for _ in range(16):  # as its 16 shards' readers would in one second
            try:
                raise ConnectionError("Connection closed by server.")
            except ConnectionError:
                logger.exception(message)
    assert len(caplog.records) == 1
