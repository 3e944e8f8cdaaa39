"""Fixtures for the live-match service.

- `make_user(name)`: a user in the test database.
- `audit_finished_matches` (autouse): at teardown, every match the test finished (or voided)
  must replay cleanly through the engine (`engine.audit`, what `python -m engine check` runs).
- `T0`: a fixed start time; service tests inject every time (no clock is read, nothing sleeps).
- `rows_kept_as_in_a_web_process`: this process keeps the rows it writes or hears of
  (matches/rows.py), as a Daphne does, from an empty start.
- `sent`: the (group, message) pairs the service's broadcasts put on the channel layer, kept
  instead of sent.
- `fast_servers` (module): a real Daphne and a real Celery worker with small clocks, for the
  end-to-end tests (`.url`; use `transactional_db` so they see the test's rows).
"""

from __future__ import annotations

import json
import os
import random

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

import engine
from matches import broadcast, rows, services
from matches.models import Match
from matches.selectors import match_record, match_state
from scripts.proc import Supervisor
from tests.support.dealing import deal_by_service
from tests.support.servers import server_environment, start_celery_worker, start_daphne

T0 = 1_800_000_000_000


@pytest.fixture
def rows_kept_as_in_a_web_process(monkeypatch):
    monkeypatch.setattr(rows.recent, "enabled", True)
    rows.recent.clear()
    yield
    rows.recent.clear()


@pytest.fixture
def sent(monkeypatch) -> list[tuple[str, dict]]:
    messages = []

    async def send_all(pairs, writes=None):
        messages.extend(pairs)
        if writes is not None:  # what Redis must hold first is written all the same
            await broadcast._queued(writes).execute()

    monkeypatch.setattr(broadcast, "_send_all", send_all)
    return messages


# The end-to-end clocks: a whole match takes seconds, and a timeout a couple of seconds.
FAST = {
    "MATCH_BANK_MS": "1500",
    "MATCH_DELAY_MS": "300",
    "START_GRACE_MS": "600",
    "HOTSEAT_REVEAL_GRACE_MS": "600",
    "TIMEOUT_LATE_TOLERANCE_MS": "3000",
}


@pytest.fixture
def make_user(db):
    counter = iter(range(1, 1_000))

    def make(name: str | None = None, **fields):
        name = name or f"player{next(counter)}"
        return get_user_model().objects.create_user(
            name, password=None, **fields
        )  # no slow hashing

    return make


@pytest.fixture(autouse=True)
def audit_finished_matches(request):
    """Every match a test finished replays cleanly through the rules, its record complete."""
    marker = request.node.get_closest_marker("django_db")
    uses_db = marker is not None or {"db", "transactional_db"} & set(request.fixturenames)
    if not uses_db:
        yield
        return
    transactional = "transactional_db" in request.fixturenames or (
        marker is not None and marker.kwargs.get("transaction")
    )
    request.getfixturevalue("transactional_db" if transactional else "db")
    yield
    for match in Match.objects.filter(status__in=[Match.Status.FINISHED, Match.Status.VOID]):
        record = match_record(match)
        _, problems = engine.audit(json.loads(json.dumps(record)))
        assert problems == [], f"match {match.pk} does not replay: {[str(p) for p in problems]}"
        assert all(r["seed"] is not None for r in record["rounds"]), (
            "a finished match reveals every seed"
        )


# --- driving a match through the service with injected time ----------------------------------


class Table:
    """A match driven through `services.match_submit` with an injected clock (`now`)."""

    def __init__(self, match: Match, users, now: int):
        self.match = match
        self.users = users  # seat -> user
        self.now = now
        self.cseq = {0: 0, 1: 0}

    @property
    def state(self) -> engine.MatchState:
        self.match.refresh_from_db()
        return match_state(self.match)

    def submit(self, seat: int, command: dict, *, after_ms: int = 0, cseq: int | None = None):
        self.now += after_ms
        if cseq is None:
            slot = 0 if self.match.mode == Match.Mode.HOTSEAT else seat  # one device, one sequence
            self.cseq[slot] += 1
            cseq = self.cseq[slot]
        outcome = services.match_submit(
            match_id=self.match.pk,
            user=self.users[seat],
            command=command,
            arrival_ms=self.now,
            cseq=cseq,
        )
        self.match.refresh_from_db()
        return outcome

    def deal(self, *, after_ms: int = 0) -> bool:
        """Both players contribute to the round being dealt, if one is."""
        self.now += after_ms
        return deal_by_service(self.match, self.users, self.now)

    def start(self, *, after_ms: int = 0):
        return self.submit(engine.first_to_act(self.state), {"type": "start"}, after_ms=after_ms)

    def decide(self, *, after_ms: int = 0, bot=None, rng=None):
        """The decider makes a bot's choice (a greedy one by default)."""
        state = self.state
        bot = bot or engine.GreedyBot()
        command = bot.choose(state, state.decider, rng or random.Random(0))
        return self.submit(state.decider, command, after_ms=after_ms)

    def play_until(
        self, done, *, step_ms: int = 1_000, bot=None, seed: int = 0, limit: int = 5_000
    ):
        """Start and decide (one step every ``step_ms``) until ``done(state)`` or the match ends."""
        rng = random.Random(seed)
        for _ in range(limit):
            state = self.state
            if state.result is not None or done(state):
                return state
            if state.phase == engine.DEALING:
                self.deal(after_ms=step_ms)
            elif engine.starter(state) is not None:
                self.start(after_ms=step_ms)
            else:
                self.decide(after_ms=step_ms, bot=bot, rng=rng)
        raise AssertionError("the match did not get there")

    def events(self) -> list[dict]:
        self.match.refresh_from_db()
        return [e for r in self.match.record["rounds"] for e in r["events"]]


@pytest.fixture
def dealing_table(make_user):
    """A fresh online match (unrated, default clock: 120 s bank, 10 s delay) created at T0,
    waiting for the contributions to its first deal."""
    player0, player1 = make_user("ala"), make_user("olek")
    match = services.match_create(
        player0=player0,
        player1=player1,
        now_ms=T0,
        clock=engine.ClockConfig(bank_ms=120_000, delay_ms=10_000),
    )
    return Table(match, {0: player0, 1: player1}, T0)


@pytest.fixture
def table(dealing_table):
    """The same match with its first round dealt, waiting for Start."""
    dealing_table.deal()
    return dealing_table


# --- end to end ---------------------------------------------------------------------------------


class Servers:
    def __init__(self, url: str):
        self.url = url


@pytest.fixture(scope="module")
def fast_servers(django_db_setup, django_db_blocker, tmp_path_factory):
    """Daphne and a Celery worker (solo pool) with the FAST clocks, on the test database."""
    with django_db_blocker.unblock():
        env = server_environment(dict(os.environ), **FAST)
    logs = tmp_path_factory.mktemp("fast-servers")
    with Supervisor() as supervisor:
        daphne = start_daphne(supervisor, env, logs / "daphne.log")
        start_celery_worker(supervisor, env, logs / "celery.log")
        yield Servers(daphne.url)


@pytest.fixture
def fast_settings(settings):
    """The test process (which creates matches) agrees with the servers' clocks."""
    for name, value in FAST.items():
        setattr(settings, name, int(value))
    return settings


def session_cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


@pytest.fixture(autouse=True)
def reproducible_deals(monkeypatch):
    """Deals made in this process follow a fixed sequence of seeds, so service tests replay the
    same matches every run (the servers in subprocesses keep their CSPRNG)."""
    rng = random.Random(72)  # a seed stream whose greedy match is short (121 events, 6 rounds)
    monkeypatch.setattr(engine, "new_seed", lambda: f"{rng.getrandbits(256):064x}")


@pytest.fixture
def present():
    """Mark seats as connected in the presence registry (as the consumer does), undone after."""
    from matches.presence import SEATS, subject
    from realtime.presence import wall_ms
    from realtime.redis_clients import sync_redis

    keys = []

    def mark(match, seat: int) -> None:
        key = SEATS.key(subject(match.pk, seat))
        keys.append(key)
        sync_redis().zadd(key, {"test-socket": wall_ms()})

    yield mark
    if keys:
        sync_redis().delete(*keys)
