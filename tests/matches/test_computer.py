"""The computer at the table (matches/computer.py): it plays server-side through the match
service like anyone, from its own view only, once per queued turn; and end to end, a person
plays a whole rated match against it through a real Daphne and a real Celery worker."""

from __future__ import annotations

import asyncio
import random

import pytest

import engine
from accounts.services import AccountError, computer_player, user_register
from clients.match_client import MatchClient, play_match
from lobby import services as lobby
from matches import computer, services, timekeeping
from matches.models import Match
from matches.selectors import match_state
from scripts.proc import wait_until
from tests.engine.builders import hidden_tiles_redealt
from tests.support.dealing import contribution, deal_by_service

from .conftest import session_cookie

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued(monkeypatch):
    """The computer turns the service queues, in order (the test plays the worker's part)."""
    turns: list[tuple[str, int]] = []
    monkeypatch.setattr(services, "queue_computer_turn", lambda *turn: turns.append(turn))
    return turns


@pytest.fixture
def after_commit(django_capture_on_commit_callbacks):
    """Run a service call and what it does after commit (broadcasts, queued turns)."""

    def run(call, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return call(**kwargs)

    return run


def versus_computer(make_user, level="greedy", *, rated=False, run=None):
    person = make_user(on_ladder=True)
    start = lobby.computer_start
    kwargs = {"user": person, "level": level, "rated": rated}
    match = run(start, **kwargs) if run else start(**kwargs)
    return person, Match.objects.get(pk=match.pk)


def test_playing_the_computer_makes_a_match_against_its_account(make_user):
    person, match = versus_computer(make_user, "expert", rated=True)
    bot = computer_player(level="expert")
    assert {match.player0_id, match.player1_id} == {person.pk, bot.pk}
    assert match.rated and match.computer_seat == match.seats_of(bot)[0]
    players = match.record["players"]
    assert [p["computer"] for p in players] == [
        "expert" if p["username"] == bot.username else None for p in players
    ]
    assert bot.on_ladder and not bot.has_usable_password()


def test_the_computers_levels_are_the_engines_and_nothing_else(make_user):
    person = make_user()
    with pytest.raises(lobby.LobbyError) as refused:
        lobby.computer_start(user=person, level="godlike", rated=False)
    assert refused.value.code == "no_such_level"
    assert not Match.objects.exists()


def test_a_rated_match_against_the_computer_needs_the_ladder(make_user):
    person = make_user()
    with pytest.raises(lobby.LobbyError) as refused:
        lobby.computer_start(user=person, level="greedy", rated=True)
    assert refused.value.code == "not_on_ladder"


def test_nobody_can_register_as_the_computer(db):
    with pytest.raises(AccountError) as refused:
        user_register(username="Computer-Expert", password="correct-horse-battery-9")
    assert refused.value.code == "username_reserved"


@pytest.mark.parametrize("level", ["greedy", "expert"])
def test_the_computer_is_queued_exactly_when_it_is_to_act_and_plays_a_whole_match(
    make_user, queued, after_commit, level, settings
):
    settings.COMPUTER_BUDGET_MS = {"expert": 2}
    person, match = versus_computer(make_user, level, run=after_commit)
    human_seat = 1 - match.computer_seat
    rng = random.Random(5)
    for _ in range(5_000):
        match.refresh_from_db()
        if match.is_over:
            break
        state = match_state(match)
        to_act = services.computer_to_act(match, state)
        assert (bool(queued) and queued[-1] == (str(match.pk), state.seq)) == to_act
        if to_act:
            assert after_commit(computer.play_turn, match_id=str(match.pk), seq=state.seq) in (
                "contribute", "start", "play", "draw", "offer", "accept", "waive"
            )  # fmt: skip
            continue
        seen = engine.view(state, human_seat)
        if engine.may_contribute(state, human_seat):
            command = contribution(human_seat, state.round_no)
        elif engine.starter(state) == human_seat:
            command = {"type": "start"}
        else:
            command = engine.BOTS["random"]().choose_from_view(seen, rng)
        after_commit(
            services.match_submit,
            match_id=match.pk, user=person, command=command, arrival_ms=timekeeping.now_ms(),
        )  # fmt: skip
    assert match.is_over and match.reason == "points"
    # The computer contributed to every deal itself (no stand-in was needed).
    contributions = [c for r in match.record["rounds"] for c in r["contributions"]]
    assert contributions and all(c["from_player"] for c in contributions)
    # The audit_finished_matches fixture replays the record through the rules at teardown.


def computer_to_start(make_user) -> tuple[Match, engine.MatchState]:
    _person, match = versus_computer(make_user)
    state = dealt_by_both(match)
    while engine.starter(state) != match.computer_seat:
        match = flip_who_starts(match)
        state = dealt_by_both(match)
    assert services.computer_to_act(match, state)
    return match, state


def dealt_by_both(match: Match) -> engine.MatchState:
    """The computer contributes to the first deal on its turn, the person by the service."""
    person = match.player0 if match.computer_seat == 1 else match.player1
    command = contribution(1 - match.computer_seat, 1)
    services.match_submit(
        match_id=match.pk, user=person, command=command, arrival_ms=timekeeping.now_ms()
    )
    match.refresh_from_db()
    assert computer.play_turn(match_id=str(match.pk), seq=match.seq) == "contribute"
    match.refresh_from_db()
    return match_state(match)


def test_a_turn_queued_twice_is_played_once(make_user, queued):
    match, state = computer_to_start(make_user)
    assert computer.play_turn(match_id=str(match.pk), seq=state.seq) == "start"
    assert computer.play_turn(match_id=str(match.pk), seq=state.seq) == "stale"
    match.refresh_from_db()
    starts = [e for e in match.record["rounds"][0]["events"] if e["type"] == "start"]
    assert len(starts) == 1


def flip_who_starts(match: Match) -> Match:
    """Another match of the same two players until the computer is the one to press Start."""
    person = match.player0 if match.computer_seat == 1 else match.player1
    services.match_submit(
        match_id=match.pk, user=person, command={"type": "resign"}, arrival_ms=timekeeping.now_ms()
    )
    return Match.objects.get(pk=lobby.computer_start(user=person, level="greedy", rated=False).pk)


@pytest.mark.parametrize("level", ["random", "greedy"])
def test_the_computer_decides_from_its_own_view_only(level):
    rng = random.Random(11)
    state = engine.new_match(engine.deal_from_seed(engine.new_seed()))
    state, _ = engine.apply(state, None, {"type": "start"}, 0)
    seat, now, compared = 0, 0, 0
    while state.result is None and state.decider is not None:
        now += 1_000
        if state.decider == seat:
            twin = hidden_tiles_redealt(state, seat, rng)
            assert engine.view(twin, seat) == engine.view(state, seat)
            decisions = [computer.decide(level, t, seat, random.Random(now)) for t in (state, twin)]
            assert decisions[0] == decisions[1]
            compared += 1
            command = decisions[0]
        else:
            command = engine.BOTS["greedy"]().choose(state, state.decider, rng)
        state, _ = engine.apply(state, state.decider, command, now)
    assert compared >= 3


def test_a_lost_computer_turn_is_queued_again(make_user, queued):
    match, state = computer_to_start(make_user)
    queued.clear()
    now = timekeeping.now_ms()
    assert computer.overdue_turns(now_ms=now, older_than_ms=10_000) == 0
    assert computer.overdue_turns(now_ms=now + 20_000, older_than_ms=10_000) == 1
    assert queued == [(str(match.pk), state.seq)]


@pytest.mark.django_db(transaction=True)
def test_a_person_plays_a_whole_rated_match_against_the_computer_through_the_servers(
    fast_servers, fast_settings, make_user
):
    person = make_user(on_ladder=True)
    match = lobby.computer_start(user=person, level="greedy", rated=True)
    cookie = session_cookie(person)

    async def scenario():
        client = await MatchClient.connect(
            fast_servers.url, match.pk, sessionid=cookie, name="person"
        )
        await client.wait_for(lambda c: c.state is not None)
        await play_match(client, strategy="random", rng=random.Random(4), timeout=60)
        await client.close()
        return client

    client = asyncio.run(scenario())
    match.refresh_from_db()
    assert match.status == "finished" and match.reason in ("points", "time", "abandon")
    assert client.view["result"]["winner"] == match.winner
    # A forfeit is told first: its ratings are written a moment later.
    wait_until(lambda: match.refresh_from_db() or not match.end_pending, 10, message="ratings")
    bot = computer_player(level="greedy")
    assert bot.rated_games == 1 and match.rating_after0 is not None


def test_the_computer_remembers_the_round_from_the_views_it_was_shown(make_user, queued):
    _person, match = versus_computer(make_user)
    seat, rng, now = match.computer_seat, random.Random(2), timekeeping.now_ms()
    shown = []
    while True:
        match.refresh_from_db()
        state = match_state(match)
        if state.round_no > 1 or state.result is not None:
            break
        now += 10
        if deal_by_service(match, {0: match.player0, 1: match.player1}, now):
            continue
        starter = engine.starter(state)
        actor = starter if starter is not None else state.decider
        if actor == seat and starter is None:
            shown.append(engine.view(state, seat))
        command = (
            {"type": "start"}
            if starter is not None
            else engine.BOTS["greedy"]().choose_from_view(engine.view(state, actor), rng)
        )
        player = match.player0 if actor == 0 else match.player1
        services.match_submit(match_id=match.pk, user=player, command=command, arrival_ms=now)
    assert shown and computer.earlier_views(match.record, seat, 1) == shown
    assert computer.earlier_views(match.record, 1 - seat, 1) != shown
