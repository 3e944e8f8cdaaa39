"""The match client in a real Chromium against a real Daphne and Celery worker: two players
register, meet in the lobby and play a whole match by clicking; pass-and-play with its private
hand-overs; the rules panel while a clock runs; a reload mid-match; the Polish interface."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from playwright.sync_api import Page, expect

import engine
from matches import services
from matches.models import Match
from tests.browser.driver import (
    PASSWORD,
    act,
    current,
    deal_by_service,
    off_the_loop,
    settlement_shown,
    wait_for_change,
    wait_for_seq,
)

pytestmark = pytest.mark.slow

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
TAKE_SCREENSHOTS = bool(os.environ.get("SB_SCREENSHOTS"))
MATCH_URL = re.compile(r"/match/([0-9a-f-]{36})/$")


def register(page: Page, base: str, username: str) -> None:
    page.goto(f"{base}/accounts/register/")
    page.locator("#id_username").fill(username)
    page.locator("#id_password1").fill(PASSWORD)
    page.locator("#id_password2").fill(PASSWORD)
    page.get_by_role("button", name=re.compile("Sign up")).click()
    expect(page).to_have_url(re.compile(r"/lobby/$"))


def log_in(page: Page, base: str, user) -> None:
    client = Client()
    client.force_login(user)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": base}]
    )


def shoot(page: Page, name: str) -> None:
    if TAKE_SCREENSHOTS:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / name))


def test_two_players_register_meet_in_the_lobby_and_play_a_whole_match(servers, new_page):
    base = servers.url
    ala, olek = new_page(), new_page()
    register(ala, base, "ala")
    register(olek, base, "olek")

    # They meet in the lobby: ala offers a match, olek accepts her seek.
    for page in (ala, olek):
        expect(page.locator("#conn-dot")).to_have_attribute("data-state", "open")
    ala.locator("#seek-submit").click()
    seek = olek.locator("#seek-list li[data-seek-id]").filter(has_text="ala")
    expect(seek).to_be_visible()
    expect(olek.locator("#count-seeks")).to_have_text("1")  # an open seek is counted as such
    shoot(olek, "lobby.png")
    seek.get_by_role("button", name="Accept").click()
    for page in (ala, olek):
        expect(page).to_have_url(MATCH_URL)
    match_id = MATCH_URL.search(olek.url).group(1)
    match, state = current(match_id)
    pages = {0: ala if match.player0.username == "ala" else olek}
    pages[1] = olek if pages[0] is ala else ala
    names = [match.player0.username, match.player1.username]
    winner = 0

    step = 0
    settlements = 0
    reloaded = False
    while True:
        match, state = current(match_id)
        if state.phase == engine.DEALING:
            # Each page sends its player's contribution to the deal by itself.
            deal_by_service(match, state, browser_seats=(0, 1))
            continue
        for page in pages.values():
            wait_for_seq(page, match.seq)
        if state.result is not None:
            break
        if state.phase == "ready":
            starter = engine.first_to_act(state)
            other = pages[1 - starter]
            if state.round_no > 1:
                for page in pages.values():
                    settlement_shown(page, state.round_no - 1)
                    proof = page.locator("#overlay .deal-proof")
                    expect(proof).to_have_attribute("data-verified", "true")
                    expect(proof).to_contain_text("Deal verified")
                settlements += 1
                expect(other.locator("#overlay")).to_contain_text(
                    f"Waiting for {names[starter]} to continue"
                )
            else:
                expect(other.locator("#overlay")).to_contain_text(
                    f"Waiting for {names[starter]} to start"
                )
            pages[starter].locator("#start").click()
        else:
            seat = state.decider
            page = pages[seat]
            expect(page.locator("#turn")).to_have_text("Your turn")
            expect(page.locator("#seat-top .count")).to_have_text(
                f"Tiles: {len(state.hands[1 - seat])}"
            )
            expect(page.locator("#boneyard")).to_have_text(str(len(state.boneyard)))
            if not reloaded and step == 3:
                # A reload mid-match: the page comes back with the same state and keeps playing.
                reloaded = True
                page.reload()
                wait_for_seq(page, match.seq)
                expect(page.locator("#hand .hand-tile")).to_have_count(len(state.hands[seat]))
                expect(page.locator("#conn")).to_have_attribute("data-state", "connected")
            act(page, match, state, seat, winner=winner, step=step)
            step += 1
        wait_for_change(match_id, match.seq)

    assert state.result.reason == "points" and state.result.winner == winner
    assert settlements >= 1
    for page in pages.values():
        overlay = page.locator("#overlay")
        expect(overlay).to_have_attribute("data-kind", "result")
        expect(overlay).to_contain_text(f"{names[winner]} wins by points")
        expect(overlay.get_by_role("link", name="Replay this match")).to_be_visible()
    # The finished match is in the archive, and its replay steps through it.
    page = pages[0]
    page.goto(f"{base}/matches/")
    page.get_by_role("link", name="Replay").first.click()
    expect(page.locator("#rp-position")).to_contain_text("Event")
    page.locator("#rp-last").click()
    expect(page.locator("#rp-event")).to_contain_text("accepted")
    page.locator("#rp-first").click()
    expect(page.locator("#board .domino")).to_have_count(0)
    expect(page.locator("#rp-deal")).to_contain_text("Deal verified")
    # The deal, both players' contributions to it, the clocks starting, the opening tile.
    for _contribution in (0, 1):
        page.locator("#rp-forward").click()
        expect(page.locator("#rp-event")).to_contain_text("contributed to the deal")
    page.locator("#rp-forward").click()
    expect(page.locator("#rp-event")).to_have_text("Clocks running")
    page.locator("#rp-forward").click()
    expect(page.locator("#board .domino")).to_have_count(1)


def test_pass_and_play_hides_the_hand_at_each_hand_over_until_the_reveal(servers, new_page):
    base = servers.url
    user = get_user_model().objects.create_user("solo", password=PASSWORD)
    page = new_page()
    log_in(page, base, user)
    page.goto(f"{base}/lobby/")
    expect(page.locator("#conn-dot")).to_have_attribute("data-state", "open")
    page.locator("#hotseat-start").click()
    expect(page).to_have_url(MATCH_URL)
    match_id = MATCH_URL.search(page.url).group(1)
    handovers = 0
    step = 0
    while handovers < 4:
        match, state = current(match_id)
        if state.phase == engine.DEALING:
            # The one device contributes for both seats, by itself.
            deal_by_service(match, state, browser_seats=(0, 1))
            continue
        wait_for_seq(page, match.seq)
        if state.phase == "ready":
            page.locator("#start").click()
        elif state.phase == "handover":
            handovers += 1
            overlay = page.locator("#overlay")
            expect(overlay).to_have_attribute("data-kind", "handover")
            expect(overlay).to_contain_text("Pass the device to solo, then reveal")
            expect(page.locator("#hand .hand-tile")).to_have_count(0)  # no hand is on the page
            page.get_by_role("button", name="Reveal my tiles").click()
        else:
            seat = state.decider
            expect(page.locator("#hand .hand-tile")).to_have_count(len(state.hands[seat]))
            act(page, match, state, seat, winner=0, step=step)
            step += 1
        wait_for_change(match_id, match.seq, page)
    # Resigning asks first.
    match, state = current(match_id)
    wait_for_seq(page, match.seq)
    if state.phase == "handover":
        page.get_by_role("button", name="Reveal my tiles").click()
        wait_for_change(match_id, match.seq, page)
    page.locator("#resign").click()
    expect(page.get_by_role("alertdialog")).to_contain_text("Resign this match?")
    page.get_by_role("button", name="Yes, resign").click()
    expect(page.locator("#overlay")).to_contain_text("by resignation")
    assert Match.objects.get(pk=match_id).reason == "resign"


def test_the_rules_panel_opens_while_the_clock_keeps_running_and_the_interface_speaks_polish(
    servers, new_page
):
    base = servers.url
    users = [
        get_user_model().objects.create_user(name, password=PASSWORD) for name in ("basia", "kuba")
    ]
    now_ms = services.timekeeping.now_ms()
    match = off_the_loop(services.match_create, player0=users[0], player1=users[1], now_ms=now_ms)
    pages = {}
    for seat in (0, 1):
        pages[seat] = new_page()
        log_in(pages[seat], base, users[seat])
        pages[seat].goto(f"{base}/match/{match.id}/")
    deal_by_service(match, current(match.id)[1], browser_seats=(0, 1))  # the pages deal
    state = current(match.id)[1]
    starter = engine.first_to_act(state)
    first, other = pages[starter], pages[1 - starter]

    # The other player reads the page in Polish.
    other.locator("#lang-select").select_option("pl")
    expect(other.locator("html")).to_have_attribute("lang", "pl")
    expect(other.locator("#overlay")).to_contain_text(
        f"Czekamy, aż {users[starter].username} rozpocznie"
    )
    expect(other.locator("#rules-open")).to_have_text("Zasady")

    first.locator("#start").click()
    clock = first.locator("#seat-bottom .delay")
    expect(clock).to_have_text(re.compile(r"\+\d+\.\d s"))
    seq = Match.objects.get(pk=match.id).seq
    first.locator("#rules-open").click()
    panel = first.locator("#rules-panel")
    expect(panel).to_be_visible()
    expect(panel.locator("figure[data-drawn]")).to_have_count(11)
    expect(panel.locator('figure[data-example="ex-1-5"] .counted')).to_have_count(3)
    expect(panel.locator('figure[data-example="ex-1-5"] .domino.spinner')).to_have_count(1)
    shown = clock.inner_text()
    expect(clock).not_to_have_text(shown)  # still ticking behind the open panel
    assert Match.objects.get(pk=match.id).seq == seq  # opening the rules sent nothing
    first.locator("#rules-close").click()
    expect(panel).to_be_hidden()

    # The Polish rules page follows the seed's wording, its figures drawn by the same renderer.
    other.goto(f"{base}/rules/")
    expect(other.get_by_role("heading", name="Dokładanie i liczenie końców")).to_be_visible()
    expect(other.locator('figure[data-example="ex-1-4"] figcaption')).to_contain_text(
        "Liczone wkłady: 4 + 1 = 5"
    )
