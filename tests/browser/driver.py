"""Playing a seat of a live match by clicking in its page, as a person would.

The test decides *what* to play from the match's engine state in the database (the test owns
the database the servers use); the page is only ever driven through its controls.
"""

from __future__ import annotations

import random
import re
from concurrent.futures import ThreadPoolExecutor

from playwright.sync_api import Page, expect

import engine
from engine.legal import legal_plays
from engine.play import play_score
from matches import services
from matches.models import Match
from matches.selectors import match_state
from tests.support import dealing, wait_until


def off_the_loop(function, **kwargs):
    """Call ``function`` in a fresh thread: Playwright's event loop runs in this one, and the
    match service's after-commit broadcast (async_to_sync) may not run beside it."""
    from django.db import connection

    with ThreadPoolExecutor(1) as pool:

        def call():
            try:
                return function(**kwargs)
            finally:
                connection.close()

        return pool.submit(call).result()


def tile_key(tile) -> str:
    return f"{tile[0]}-{tile[1]}"


def place_key(place) -> str:
    return "open" if place is None else f"{tile_key(place[0])}:{place[1]}"


def current(match_id) -> tuple[Match, engine.MatchState]:
    match = Match.objects.get(pk=match_id)
    return match, match_state(match)


def wait_for_seq(page: Page, seq: int) -> None:
    expect(page.locator("body")).to_have_attribute("data-seq", str(seq))


def wait_for_change(match_id, seq: int, page: Page | None = None) -> None:
    """Until the match has moved past ``seq``; on a timeout, what ``page`` showed says why
    (its connection's state and the error it was sent, if any)."""
    try:
        wait_until(
            lambda: Match.objects.get(pk=match_id).seq != seq,
            15,
            message="the server to apply the command",
        )
    except TimeoutError as timeout:
        if page is None:
            raise
        conn = page.locator("#conn").get_attribute("data-state")
        error = page.locator("#error").text_content()
        shown = page.locator("body").get_attribute("data-seq")
        raise TimeoutError(
            f"{timeout}; the page showed seq {shown}, connection {conn!r}, error {error!r}"
        ) from timeout


def choose_play(state: engine.MatchState, seat: int, *, best: bool):
    """The play that scores most (``best``) or least, heaviest tile first either way."""

    def value(option):
        tile, place = option
        score = play_score(state.layout, tile, place)
        return (score if best else -score, sum(tile))

    return max(legal_plays(state, seat), key=value)


def click_play(
    page: Page, state: engine.MatchState, seat: int, tile, place, *, via: str = "button"
) -> None:
    """Choose the tile in the hand, then (if it fits more than one place) the place."""
    places = [p for t, p in legal_plays(state, seat) if t == tile]
    page.locator(f'#hand .hand-tile[data-tile="{tile_key(tile)}"]').click()
    if len(places) == 1:
        return  # one action plays a tile that fits only one place
    if via == "dot":
        page.locator(f'#board .place-dot[data-place="{place_key(place)}"]').click()
    elif via == "keyboard":
        button = page.locator(f'#places .place-button[data-place="{place_key(place)}"]')
        button.focus()
        page.keyboard.press("Enter")
    else:
        page.locator(f'#places .place-button[data-place="{place_key(place)}"]').click()


def act(
    page: Page, match: Match, state: engine.MatchState, seat: int, *, winner: int, step: int
) -> None:
    """One decision of ``seat``: the winner plays greedily, the loser as badly as it may and, in
    the auction, offers its whole balance (which, accepted, ends the match on points)."""
    if state.phase == "auction":
        offer = state.auction.offer
        if seat == winner:
            if offer is None and page.locator("#offer-submit").is_visible():
                page.locator("#offer-amount").select_option(index=0)
                page.locator("#offer-submit").click()
            elif offer is None:
                page.locator("#waive").click()
            else:
                page.locator("#accept").click()
        else:
            if page.locator("#offer-submit").is_visible():
                options = page.locator("#offer-amount option")
                page.locator("#offer-amount").select_option(index=options.count() - 1)
                page.locator("#offer-submit").click()
            elif offer is None:
                page.locator("#waive").click()
            else:
                page.locator("#accept").click()
        return
    if not legal_plays(state, seat):
        expect(page.locator("#draw")).to_be_visible()
        page.locator("#draw").click()
        return
    expect(page.locator("#draw")).to_be_hidden()
    tile, place = choose_play(state, seat, best=seat == winner)
    click_play(page, state, seat, tile, place, via=("button", "dot", "keyboard")[step % 3])


def settlement_shown(page: Page, round_no: int) -> None:
    overlay = page.locator("#overlay")
    expect(overlay).to_have_attribute("data-kind", "settlement")
    expect(overlay).to_contain_text(
        re.compile(rf"Round {round_no} settled|Runda {round_no} rozliczona")
    )


PASSWORD = "a-long-test-pass-1"


def new_match(names=("ala", "olek")):
    """A new online match between two new users with these names; clocks stand until Start."""
    from django.contrib.auth import get_user_model

    users = [get_user_model().objects.create_user(name, password=PASSWORD) for name in names]
    now_ms = services.timekeeping.now_ms()
    match = off_the_loop(services.match_create, player0=users[0], player1=users[1], now_ms=now_ms)
    return match, users


def submit(match: Match, seat: int, command: dict) -> None:
    """``seat``'s command, straight to the match service (for moves a test does not watch)."""
    off_the_loop(
        services.match_submit,
        match_id=match.id,
        user=match.player1 if seat == 1 else match.player0,
        command=command,
        arrival_ms=services.timekeeping.now_ms(),
    )


def deal_by_service(match: Match, state: engine.MatchState, browser_seats=()) -> None:
    """The round being dealt gets its contributions (docs/fairness.md): each seat not in
    ``browser_seats`` sends one through the service; an open page contributes for the seats in
    ``browser_seats`` by itself, and this waits until it has, and checks that it was the page's
    own (not the server's stand-in after DEAL_CONTRIBUTION_MS). The pages go first: a command
    stamped here while a page's is being applied would arrive "before the last event"."""
    for seat in browser_seats:
        contribution = wait_until(
            lambda seat=seat: contribution_of(match.id, state.round_no, seat),
            15,
            message=f"seat {seat}'s contribution to round {state.round_no}'s deal",
        )
        assert contribution["from_player"], f"the page of seat {seat} did not contribute in time"
    for seat in (0, 1):
        if seat not in browser_seats and engine.may_contribute(current(match.id)[1], seat):
            submit(match, seat, dealing.contribution(seat, state.round_no))


def contribution_of(match_id, round_no: int, seat: int) -> dict | None:
    """The ``contribute`` event for ``seat`` in round ``round_no`` of the record, if any."""
    events = Match.objects.get(pk=match_id).record["rounds"][round_no - 1]["events"]
    return next((e for e in events if e["type"] == "contribute" and e["seat"] == seat), None)


def play_by_service_until(
    match_id, done, *, seed: int = 5, browser_seats=()
) -> tuple[Match, engine.MatchState]:
    """Both seats play greedily through the service (contributions, Start and Continue
    included) until ``done(state)``; returns the match and the state that satisfied it. The
    seats in ``browser_seats`` have their page open, which contributes to each deal itself."""
    bot, rng = engine.GreedyBot(), random.Random(seed)
    while True:
        match, state = current(match_id)
        if done(state):
            return match, state
        assert state.result is None, (
            f"the match ended before the situation the test needs: {state.result} in round "
            f"{state.round_no}; last events {match.record['rounds'][-1]['events'][-3:]}"
        )
        if state.phase == engine.DEALING:
            deal_by_service(match, state, browser_seats)
        elif state.phase == "ready":
            submit(match, engine.first_to_act(state), {"type": "start"})
        else:
            submit(match, state.decider, bot.choose(state, state.decider, rng))
