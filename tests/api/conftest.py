"""The API tests' world: a few players and matches played through the match service, built once
for the package (outside the tests' transactions) and removed after it."""

from __future__ import annotations

import random
from types import SimpleNamespace
from unittest.mock import patch
from uuid import uuid4

import pytest
from django.contrib.auth import get_user_model
from django.core.cache.backends.locmem import LocMemCache
from rest_framework.test import APIClient
from rest_framework.throttling import SimpleRateThrottle

from accounts.models import RatingChange
from matches.models import Match
from tests.api.play import Table

T0_MS = 1_800_000_000_000  # 2027-01-15T08:00:00Z
HOUR_MS = 3_600_000


@pytest.fixture(autouse=True)
def fresh_throttles(monkeypatch):
    """Each test starts with its own empty throttle counts (not the shared Redis cache)."""
    # LocMemCache instances of one name share their store: a new name per test.
    monkeypatch.setattr(SimpleRateThrottle, "cache", LocMemCache(f"api-throttle-{uuid4()}", {}))


@pytest.fixture
def api():
    return APIClient()


def _clean_up(users) -> None:
    RatingChange.objects.all().delete()
    Match.objects.all().delete()
    users.filter(username__in=("ala", "olek", "ewa", "zed")).delete()


@pytest.fixture(scope="package")
def world(django_db_setup, django_db_blocker):
    """ala, olek, ewa (on the ladder) and zed, and these matches, oldest first:

    - ``full``: ala v olek, rated, played to the end by the greedy bots;
    - ``resigned``: olek v ewa, rated, ewa resigns in round 2;
    - ``abandoned``: ala v ewa, unrated, the player to act lets the clock run out;
    - ``hotseat``: zed v zed, pass-and-play, zed resigns in round 2;
    - ``live``: ala v zed, being played, two draws made in its second round.
    """
    # Built outside any test transaction: skip the after-commit broadcasts and deadline tasks.
    # The deals come from a fixed stream, so the matches below always take the shapes named.
    deals = random.Random(2027)  # with the fixed contributions, `full` ends in round 21
    with (
        django_db_blocker.unblock(),
        patch("matches.services._after_commit"),
        patch("engine.new_seed", lambda: f"{deals.getrandbits(256):064x}"),
    ):
        users = get_user_model().objects
        _clean_up(users)  # what a failed earlier set-up may have left
        ala, olek, ewa, zed = (users.create_user(name) for name in ("ala", "olek", "ewa", "zed"))
        for user in (ala, olek, ewa):
            user.on_ladder = True
            user.save(update_fields=["on_ladder"])
        full = Table(ala, olek, rated=True, now_ms=T0_MS, seed=1).play()
        table = Table(olek, ewa, rated=True, now_ms=T0_MS + HOUR_MS, seed=2)
        table.play(rounds=1)
        resigned = table.resign(1)
        table = Table(ala, ewa, now_ms=T0_MS + 2 * HOUR_MS, seed=3)
        table.play(rounds=1)
        table.step(table.state())  # Continue pressed: the clock of the player to act runs
        abandoned = table.expire()
        table = Table(zed, zed, mode=Match.Mode.HOTSEAT, now_ms=T0_MS + 3 * HOUR_MS, seed=4)
        table.play(rounds=1)
        hotseat = table.resign(0)
        table = Table(ala, zed, now_ms=T0_MS + 4 * HOUR_MS, seed=5)
        table.play(rounds=1)
        live = table.play(draws=2)
        yield SimpleNamespace(
            ala=ala, olek=olek, ewa=ewa, zed=zed,
            full=full, resigned=resigned, abandoned=abandoned, hotseat=hotseat, live=live,
        )  # fmt: skip
        _clean_up(users)
