"""A web process leaves what it made at start-up out of every garbage collection
(realtime/collector.py), so a collection walks only what serving made."""

from __future__ import annotations

import gc

import pytest

from realtime.collector import settle_after_startup


@pytest.fixture
def restored_collector():
    """A collector with nothing frozen (an earlier test may have served the app in this
    process, which froze it), put back as it was afterwards."""
    thresholds, was_frozen = gc.get_threshold(), gc.get_freeze_count() > 0
    gc.unfreeze()
    yield
    gc.unfreeze()
    if was_frozen:
        gc.freeze()
    gc.set_threshold(*thresholds)


class MadeAtStartup:
    pass


def test_start_up_objects_are_left_out_of_collections_and_new_ones_are_not(restored_collector):
    def tracked(obj) -> bool:
        return any(o is obj for o in gc.get_objects())

    assert tracked(MadeAtStartup)
    settle_after_startup()
    made_later = type("MadeLater", (), {})
    assert not tracked(MadeAtStartup)
    assert tracked(made_later)
    assert gc.get_freeze_count() > 0
    # A full collection now walks far fewer objects than the process holds.
    assert len(gc.get_objects()) < gc.get_freeze_count()


def test_the_deadline_keeper_freezes_its_start_up_but_keeps_its_young_collections_small(
    restored_collector, monkeypatch
):
    """Measured at 1,000 matches: the keeper, left as it was, stopped for a 204 ms full
    collection of its start-up objects, and with the web processes' thresholds for 60-84 ms
    young ones; every forfeit due meanwhile was that late."""
    from django.core.management import call_command

    from matches import scheduler

    seen = {}

    async def keep_deadlines():
        seen["frozen"], seen["thresholds"] = gc.get_freeze_count(), gc.get_threshold()

    monkeypatch.setattr(scheduler, "keep_deadlines", keep_deadlines)
    monkeypatch.setattr("sys.setswitchinterval", lambda interval: None)  # this process's own
    # The interpreter's defaults: a test run that imported config.asgi has the web's already.
    gc.set_threshold(700, 10, 10)
    call_command("keep_deadlines")
    assert seen["frozen"] > 0
    assert seen["thresholds"] == (700, 10, 10)
