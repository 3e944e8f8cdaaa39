"""A match between two players for the fault tests, played through real web processes."""

from __future__ import annotations

import json

from django.contrib.auth import get_user_model
from django.test import Client

import engine
from clients.match_client import MatchClient
from matches import services, timekeeping
from matches.models import Match
from matches.selectors import match_record
from tests.support.dealing import deal_by_service


def new_match(
    settings, clock: engine.ClockConfig, *, dealt: bool = True
) -> tuple[Match, list[str]]:
    """A match with nobody pressed to Start (the grace is long), and its players' session
    cookies, seat by seat. Its first round is ``dealt`` here, from both players' contributions
    through the match service (so the long grace is this process's, not the web processes'
    shorter one); otherwise it waits in dealing for the players' clients to contribute."""
    settings.START_GRACE_MS = 60_000
    users = [get_user_model().objects.create_user(f"player{seat}") for seat in (0, 1)]
    cookies = []
    for user in users:
        client = Client()
        client.force_login(user)
        cookies.append(client.cookies["sessionid"].value)
    match = services.match_create(
        player0=users[0], player1=users[1], now_ms=timekeeping.now_ms(), clock=clock
    )
    if dealt:
        assert deal_by_service(match, dict(enumerate(users)), timekeeping.now_ms())
    return match, cookies


async def seated(urls, match: Match, cookies: list[str]) -> list[MatchClient]:
    """Both players connected (to the first of ``urls`` that answers), each with the state."""
    seats = [
        await MatchClient.connect(urls, match.pk, sessionid=cookie, name=f"seat{seat}")
        for seat, cookie in enumerate(cookies)
    ]
    for client in seats:
        await client.wait_for(lambda c: c.state is not None)
    return seats


async def started(seats: list[MatchClient]) -> MatchClient:
    """Start pressed by the player whose clock it starts; returns that player's client."""
    starter = seats[seats[0].state["starter"]]
    ack = await starter.command({"type": "start"})
    assert ack["type"] == "ack", ack
    await starter.wait_for(lambda c: c.view["clock"]["running"])
    return starter


def audited(match: Match) -> dict:
    """The match's record, refreshed, after checking that it replays through the rules."""
    match.refresh_from_db()
    record = json.loads(json.dumps(match_record(match)))
    assert engine.audit(record)[1] == []
    return record
