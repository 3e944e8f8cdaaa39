"""``python manage.py botmatch``: computer players play whole matches through the running
server exactly as people would: they sign in over HTTP, meet through the lobby's WebSocket (one
offers a seek, the other accepts it), send every command over the match WebSocket, choosing
from what their own seat is told, and read the record back from the REST API to audit it."""

from __future__ import annotations

import asyncio
import http.cookiejar
import json
import random
import secrets
import urllib.parse
import urllib.request

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

import engine
from clients.lobby_client import LobbyClient, LobbyRefused
from clients.match_client import MatchClient, play_match


class Command(BaseCommand):
    help = "Play N complete matches between computer players through the running server."

    def add_arguments(self, parser):
        parser.add_argument(
            "--matches", type=int, default=1, help="how many matches to play, one after another"
        )
        parser.add_argument("--bots", choices=tuple(engine.BOTS), default="random")
        parser.add_argument(
            "--pace-ms", type=int, default=0, help="wait this long before each decision"
        )
        parser.add_argument(
            "--url", default="http://127.0.0.1:8000", help="the server (what `make run` serves)"
        )
        parser.add_argument(
            "--timeout", type=float, default=120.0, help="seconds to wait for any one message"
        )

    def handle(
        self, *args, matches: int, bots: str, pace_ms: int, url: str, timeout: float, **options
    ):
        url = url.rstrip("/")
        players = [bot_account(1), bot_account(2)]
        broken = 0
        for _ in range(matches):
            sessions = [sign_in(url, p.username, p.password_once) for p in players]
            try:
                match_id = asyncio.run(meet(url, sessions, timeout))
            except LobbyRefused as exc:
                raise CommandError(f"the lobby refused: {exc}") from None
            asyncio.run(play_both(url, match_id, sessions, bots, pace_ms, timeout))
            record = fetch_json(f"{url}/api/matches/{match_id}/")
            _, problems = engine.audit(record)
            broken += bool(problems)
            outcome = record["result"] or {}
            result = (
                f"{record['status']}: seat {outcome.get('winner')} won ({outcome.get('reason')}), "
                f"balances {record['balances']}"
            )
            self.stdout.write(f"{match_id} {result}; replay {'OK' if not problems else problems}")
        if broken:
            raise CommandError(f"{broken} match record(s) do not replay cleanly")


def bot_account(number: int):
    """The user ``bot-<number>``, with a fresh random password that is kept nowhere but in this
    process (the database keeps only its hash)."""
    user, _ = get_user_model().objects.get_or_create(username=f"bot-{number}")
    password = secrets.token_urlsafe(24)
    user.set_password(password)
    user.save(update_fields=["password"])
    user.password_once = password
    return user


async def meet(url: str, sessions: list[str], timeout: float) -> str:
    """The first player offers a seek, the second accepts it; returns the new match's id. A
    match left live by an interrupted run is resigned first (it keeps its player out of the
    lobby)."""
    lobbies = [await LobbyClient.connect(url, sessionid=session) for session in sessions]
    try:
        for lobby, session in zip(lobbies, sessions, strict=True):
            await resign_leftover(url, lobby, session, timeout)
        offerer, acceptor = lobbies
        await offerer.request({"type": "seek_create", "rated": False}, timeout)
        me = (await offerer.wait_for(lambda m: m["type"] == "personal", timeout))["me"]
        lobby = await acceptor.wait_for(
            lambda m: (
                m["type"] == "lobby"
                and any(seek["owner"]["username"] == me["username"] for seek in m["seeks"])
            ),
            timeout,
        )
        seek = next(s for s in lobby["seeks"] if s["owner"]["username"] == me["username"])
        await acceptor.request({"type": "seek_accept", "seek_id": seek["id"]}, timeout)
        started = await acceptor.wait_for(lambda m: m["type"] == "match_started", timeout)
        return started["match_id"]
    finally:
        for lobby in lobbies:
            await lobby.close()


async def resign_leftover(url: str, lobby: LobbyClient, session: str, timeout: float) -> None:
    personal = await lobby.wait_for(lambda m: m["type"] == "personal", timeout)
    if personal["live_match"] is None:
        return
    match_id = personal["live_match"].rstrip("/").rsplit("/", 1)[-1]
    client = await MatchClient.connect(url, match_id, sessionid=session, name="leftover")
    try:
        await client.wait_for(lambda c: c.state is not None, timeout)
        await client.command({"type": "resign"})
        await client.wait_for(lambda c: c.over, timeout)
    finally:
        await client.close()
    await lobby.wait_for(lambda m: m["type"] == "personal" and m["live_match"] is None, timeout)


def fetch_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.load(response)


def sign_in(url: str, username: str, password: str) -> str:
    """Sign in through the login form as a browser does; returns the session cookie."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    login = f"{url}/accounts/login/"
    opener.open(login, timeout=30).read()
    csrf = next((c.value for c in jar if c.name == "csrftoken"), None)
    if csrf is None:
        raise CommandError(f"{login} set no CSRF cookie")
    form = urllib.parse.urlencode(
        {"username": username, "password": password, "csrfmiddlewaretoken": csrf}
    )
    request = urllib.request.Request(login, data=form.encode(), headers={"Referer": login})
    opener.open(request, timeout=30).read()
    session = next((c.value for c in jar if c.name == "sessionid"), None)
    if session is None:
        raise CommandError(f"{username} could not sign in at {login}")
    return session


async def play_both(
    url: str, match_id, cookies: list[str], bots: str, pace_ms: int, timeout: float
) -> None:
    clients = [
        await MatchClient.connect(url, match_id, sessionid=cookie, name=f"seat{seat}")
        for seat, cookie in enumerate(cookies)
    ]
    try:
        await asyncio.gather(
            *(
                play_match(
                    client, strategy=bots, rng=random.Random(), pace_ms=pace_ms, timeout=timeout
                )
                for client in clients
            )
        )
    finally:
        for client in clients:
            await client.close()
