"""``python manage.py botmatch``: computer players play whole matches through the running
server exactly as people would: they sign in over HTTP, meet through the lobby, and send every
command over the match WebSocket, choosing from what their own seat is told."""

from __future__ import annotations

import asyncio
import http.cookiejar
import random
import secrets
import urllib.parse
import urllib.request

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

import engine
from lobby import services as lobby
from matches import services, timekeeping
from matches.botclient import MatchClient, play_match
from matches.models import Match
from matches.selectors import live_match_for, match_record


class Command(BaseCommand):
    help = "Play N complete matches between computer players through the running server."

    def add_arguments(self, parser):
        parser.add_argument(
            "--matches", type=int, default=1, help="how many matches to play, one after another"
        )
        parser.add_argument("--bots", choices=("random", "greedy"), default="random")
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
        for number in range(matches):
            sessions = {
                player.pk: sign_in(url, player.username, player.password_once) for player in players
            }
            for player in players:
                resign_leftover(player)
            try:
                seek = lobby.seek_create(user=players[number % 2], rated=False)
                match = lobby.seek_accept(user=players[1 - number % 2], seek_id=seek.pk)
            except lobby.LobbyError as exc:
                raise CommandError(f"the lobby refused: {exc}") from None
            cookies = [sessions[match.player0_id], sessions[match.player1_id]]
            asyncio.run(play_both(url, match.pk, cookies, bots, pace_ms, timeout))
            match = Match.objects.get(pk=match.pk)
            _, problems = engine.audit(match_record(match))
            broken += bool(problems)
            balances = match.record["balances"]
            result = (
                f"{match.status}: seat {match.winner} won ({match.reason}), balances {balances}"
            )
            self.stdout.write(f"{match.pk} {result}; replay {'OK' if not problems else problems}")
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


def resign_leftover(player) -> None:
    """A match left live by an interrupted run would keep the bot out of the lobby: resign it."""
    match = live_match_for(player)
    if match is not None:
        services.match_submit(
            match_id=match.pk,
            user=player,
            command={"type": "resign"},
            arrival_ms=timekeeping.now_ms(),
        )


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
