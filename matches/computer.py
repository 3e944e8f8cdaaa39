"""The computer at the table. It plays server-side, through the same match service as people:
its commands are stamped by the same time authority, checked by the same engine and recorded
in the same record, and its clock runs like anyone's. It decides from its own seat's view only
(``engine.view``), never from the state: it cannot see the opponent's tiles or the boneyard.

After every change that leaves the computer to act, the service queues ``computer_turn`` with
the match's event number; a turn whose number is stale does nothing, and each command carries
``cseq`` = that number + 1, so a turn queued twice is applied once (the second is a duplicate).
"""

from __future__ import annotations

import logging
import random

from django.conf import settings

import engine

from . import services, timekeeping
from .models import Match
from .selectors import match_state

log = logging.getLogger(__name__)


def play_turn(*, match_id: str, seq: int) -> str:
    """Play the computer's turn at event ``seq``: contribute to the deal, press Start or decide.
    Returns what it did."""
    match = Match.objects.select_related("player0", "player1").filter(pk=match_id).first()
    if match is None or match.is_over or match.seq != seq:
        return "stale"
    state = match_state(match)
    if not services.computer_to_act(match, state):
        return "not_its_turn"
    seat = match.computer_seat
    player = match.player0 if seat == 0 else match.player1
    earlier = earlier_views(match.record, seat, state.round_no)
    rng = random.Random(f"{match_id}:{seq}")
    command = decide(player.computer_level, state, seat, rng, earlier=earlier)
    arrival = timekeeping.stamp_arrival_sync(match_id)
    try:
        services.match_submit(
            match_id=match_id, user=player, command=command, arrival_ms=arrival.at_ms, cseq=seq + 1
        )
    except services.CommandRejected as rejected:
        log.warning("match %s: the computer's %s was refused: %s", match_id, command, rejected)
        return rejected.code
    finally:
        timekeeping.release_arrival_sync(arrival)
    return command["type"]


def decide(level: str, state: engine.MatchState, seat: int, rng: random.Random, earlier=()) -> dict:
    """The computer's command, from its own view of ``state`` and the views it had at its
    earlier decisions of the round (``earlier``) only."""
    if engine.may_contribute(state, seat):
        return engine.contribution()  # from the CSPRNG, never from the seeded ``rng``
    if engine.starter(state) == seat:
        return {"type": "start"}
    bot = bot_for(level)
    for seen in earlier:
        bot.observe(seen)
    return bot.choose_from_view(engine.view(state, seat), rng)


def earlier_views(record: dict, seat: int, round_no: int) -> list[dict]:
    """What ``seat`` was shown at each of its decisions so far in round ``round_no``: the
    computer's memory of the round, rebuilt from the record (no process keeps it)."""
    return [
        engine.view(before, seat)
        for number, event, before in engine.decision_frames(record)
        if number == round_no and event["seat"] == seat
    ]


def bot_for(level: str):
    budgets = getattr(settings, "COMPUTER_BUDGET_MS", {})
    bot_class = engine.BOTS[level]
    return bot_class(budget_ms=budgets[level]) if level in budgets else bot_class()


def overdue_turns(*, now_ms: int, older_than_ms: int) -> int:
    """Queue again the computer's turns that no worker took (a lost task, a worker that died
    while thinking); each is applied at most once. Returns how many were queued."""
    queued = 0
    for match in Match.objects.filter(
        computer_seat__isnull=False, status__in=[Match.Status.WAITING, Match.Status.LIVE]
    ):
        state = match_state(match)
        since_ms = state.last_ms or int(match.created_at.timestamp() * 1000)
        waited = now_ms - since_ms
        if waited >= older_than_ms and services.computer_to_act(match, state):
            services.queue_computer_turn(str(match.pk), state.seq)
            queued += 1
    return queued
