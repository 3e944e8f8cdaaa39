"""Fair deals in a real Chromium (docs/fairness.md): the match page sends its player's
contribution to a live round's deal by itself (both seats' in pass-and-play), and shows each
finished round's proof (deal verified, the server's seed, both contributions marked as the
player's or the server's stand-in, and a link to the recipe), as the replay viewer does per
round."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Locator, Page, expect

import engine
from matches import services
from matches.models import Match
from tests.browser.driver import (
    PASSWORD,
    contribution_of,
    current,
    new_match,
    off_the_loop,
    play_by_service_until,
    submit,
    wait_for_seq,
)
from tests.browser.test_match import log_in
from tests.support import dealing, wait_until

pytestmark = pytest.mark.slow

HEX_64 = re.compile(r"[0-9a-f]{64}")


def open_seat(new_page, base: str, match: Match, user) -> Page:
    page = new_page()
    log_in(page, base, user)
    page.goto(f"{base}/match/{match.id}/")
    return page


def round_record(match_id, round_no: int) -> dict:
    """The round as the database holds it (the live record, nothing withheld)."""
    return Match.objects.get(pk=match_id).record["rounds"][round_no - 1]


def expect_proof(box: Locator, round_no: int, rnd: dict, names: list[str]) -> None:
    """``box`` shows round ``round_no``'s proof: verified, the seed, each seat's contribution
    marked as its player's or the server's stand-in, and the link to the recipe."""
    expect(box).to_have_attribute("data-round", str(round_no))
    expect(box).to_have_attribute("data-verified", "true")
    expect(box.locator(".deal-verdict")).to_have_text("Deal verified")
    expect(box).to_contain_text(f"Server seed: {rnd['seed']}")
    for entry in rnd["contributions"]:
        name = names[entry["seat"]]
        who = (
            f"{name}'s contribution"
            if entry["from_player"]
            else f"stand-in for {name}, fixed by the commitment"
        )
        expect(box).to_contain_text(f"{who}: {entry['value']}")
    recipe = box.get_by_role("link", name="how to check it yourself")
    expect(recipe).to_have_attribute("href", "/fairness/")


def test_the_page_sends_its_players_contribution_to_a_live_deal_without_a_click(
    servers, new_page, settings
):
    settings.DEAL_CONTRIBUTION_MS = 120_000  # the server does not stand in while we look
    match, users = new_match()
    assert current(match.id)[1].phase == engine.DEALING
    page = open_seat(new_page, servers.url, match, users[0])
    # Nothing is clicked: the page contributes for its seat as soon as it sees the deal wait.
    mine = wait_until(lambda: contribution_of(match.id, 1, 0), 15, message="its contribution")
    assert (mine["from_player"], mine["source"]) == (True, "player")
    assert HEX_64.fullmatch(mine["value"])
    assert contribution_of(match.id, 1, 1) is None  # for its own seat only
    match, state = current(match.id)
    assert state.phase == engine.DEALING
    wait_for_seq(page, match.seq)
    expect(page.locator("#overlay .dealing")).to_contain_text("Dealing")
    expect(page.locator("#hand .hand-tile")).to_have_count(0)  # no tile belongs to anyone yet
    # The other player's contribution deals the round, which waits for Start as before.
    submit(match, 1, dealing.contribution(1, 1))
    match, state = current(match.id)
    assert state.phase == "ready"
    wait_for_seq(page, match.seq)
    expect(page.locator("#hand .hand-tile")).to_have_count(7)
    entries = engine.view(state, 0)["contributions"]
    assert [(e["seat"], e["from_player"], e["source"]) for e in entries] == [
        (0, True, "player"),
        (1, True, "player"),
    ]
    assert entries[0]["value"] == mine["value"]
    expect(page.locator("#event-log")).to_contain_text("ala contributed to the deal")
    expect(page.locator("#event-log")).to_contain_text("olek contributed to the deal")
    expect(page.locator("#error")).to_have_text("")  # it contributed once, and was not refused


def test_pass_and_play_contributes_for_both_seats_from_the_one_device(servers, new_page):
    user = get_user_model().objects.create_user("solo", password=PASSWORD)
    now_ms = services.timekeeping.now_ms()
    match = off_the_loop(
        services.match_create, player0=user, player1=user, mode=Match.Mode.HOTSEAT, now_ms=now_ms
    )
    page = open_seat(new_page, servers.url, match, user)
    for seat in (0, 1):
        entry = wait_until(lambda seat=seat: contribution_of(match.id, 1, seat), 15)
        assert (entry["from_player"], entry["source"]) == (True, "device")
    match, state = current(match.id)
    assert state.phase == "ready"
    wait_for_seq(page, match.seq)
    expect(page.locator("#start")).to_be_visible()
    expect(page.locator("#error")).to_have_text("")


def test_a_finished_round_shows_its_deal_verified_on_the_page_and_in_the_replay(servers, new_page):
    base = servers.url
    match, users = new_match()
    names = [users[0].username, users[1].username]
    page = open_seat(new_page, base, match, users[0])
    # Round 1: ala's page contributes, olek sends nothing: the server stands in for him.
    wait_until(
        lambda: current(match.id)[1].phase == "ready",
        services.deal_wait_ms() / 1000 + 15,
        message="the server to stand in for the missing contribution",
    )
    first = round_record(match.id, 1)["contributions"]
    assert [(c["from_player"], c["source"]) for c in first] == [(True, "player"), (False, "server")]
    # Played to its end; round 2 is dealt from both players' contributions.
    match, state = play_by_service_until(
        match.id, lambda s: s.round_no == 2 and s.phase == "ready", browser_seats=(0,)
    )
    wait_for_seq(page, match.seq)
    overlay = page.locator("#overlay")
    expect(overlay).to_have_attribute("data-kind", "settlement")
    expect_proof(overlay.locator(".deal-proof"), 1, round_record(match.id, 1), names)
    expect(overlay.locator("#start, .waiting").first).to_be_visible()
    # olek resigns before round 2 starts: the match's end reveals round 2's deal too, and the
    # result card shows its proof.
    submit(match, 1, {"type": "resign"})
    match, state = current(match.id)
    wait_for_seq(page, match.seq)
    expect(overlay).to_have_attribute("data-kind", "result")
    last = state.round_no
    assert last == 2 and round_record(match.id, 2)["hands"] is not None
    expect_proof(overlay.locator(".deal-proof"), last, round_record(match.id, last), names)
    # The recipe it links to is the page with the standalone verifier.
    overlay.get_by_role("link", name="how to check it yourself").click()
    expect(page).to_have_url(f"{base}/fairness/")
    expect(page.locator("#verifier")).to_contain_text("def verify(rnd)")

    # The replay shows each round's proof as it steps into that round.
    viewer = new_page()
    viewer.goto(f"{base}/match/{match.id}/replay/")
    expect(viewer.locator("body")).to_have_attribute("data-frame", "0")
    for round_no in range(1, last + 1):
        viewer.locator("#rp-round").select_option(str(round_no))
        expect(viewer.locator("#rp-position")).to_contain_text(f"Round {round_no}")
        expect_proof(viewer.locator("#rp-deal"), round_no, round_record(match.id, round_no), names)
    viewer.locator("#rp-first").click()
    viewer.locator("#rp-forward").click()  # ala's contribution, then the server's stand-in
    expect(viewer.locator("#rp-event")).to_have_text("ala contributed to the deal")
    viewer.locator("#rp-forward").click()
    expect(viewer.locator("#rp-event")).to_have_text("The server stood in for olek's contribution")
