"""The whole interface in Polish: every page, signed in and out, a live match (played and
watched), a finished one and its replay, shows none of the interface's English strings once
Polish is chosen."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.driver import (
    current,
    deal_by_service,
    new_match,
    play_by_service_until,
    submit,
    wait_for_seq,
)
from tests.browser.test_match import log_in, shoot

pytestmark = pytest.mark.slow

CATALOGUE = Path(__file__).resolve().parents[2] / "locale" / "pl" / "LC_MESSAGES" / "django.po"
ENTRY = re.compile(r'^msgid "(.+)"\nmsgstr "(.+)"$', re.MULTILINE)
PLACEHOLDER = re.compile(r"\{\w+\}|%\(\w+\)s")
# Single words of the interface, too short to be caught as phrases below.
ENGLISH_WORDS = [
    "Lobby", "Leaderboard", "Archive", "Rules", "Accept", "Waive", "Offer", "Resign",
    "Boneyard", "Balance", "waiting", "Wins", "Losses", "Rating", "Player", "Replay",
    "Challenge", "Rated", "casual", "Connected", "Sound", "Continue", "Round", "Scores",
]  # fmt: skip


def english_strings() -> list[str]:
    """The interface's English: each translated phrase of the catalogue (its longest run of
    words between placeholders, when that is at least two words), and the words above."""
    phrases = set(ENGLISH_WORDS)
    for english, polish in ENTRY.findall(CATALOGUE.read_text()):
        if english == polish:
            continue
        longest = max(PLACEHOLDER.split(english), key=len).strip(" :.,()–")
        if len(longest.split()) >= 2:
            phrases.add(longest)
    return sorted(phrases)


def english_on(page: Page) -> list[str]:
    text = page.locator("body").inner_text() + "\n" + page.title()
    return [s for s in english_strings() if re.search(rf"(?<!\w){re.escape(s)}(?!\w)", text)]


def speak_polish(page: Page, base: str) -> None:
    page.context.add_cookies([{"name": "django_language", "value": "pl", "url": base}])


def test_every_page_in_polish_shows_no_english_interface_string(servers, new_page):
    base = servers.url
    assert len(english_strings()) > 150  # the list really is the interface's
    match, users = new_match()
    finished, _users = new_match(("celina", "darek"))
    # Dealt from both contributions, so its result card shows a whole deal proof.
    deal_by_service(finished, current(finished.id)[1])
    submit(finished, 0, {"type": "resign"})
    match, state = play_by_service_until(match.id, lambda s: len(s.layout.placements) >= 2)

    visitor = new_page()
    speak_polish(visitor, base)
    signed_out = [
        "/",
        "/accounts/login/",
        "/accounts/register/",
        "/leaderboard/",
        "/rules/",
        "/fairness/",
        f"/match/{match.id}/",  # watched by a spectator
    ]
    player = new_page()
    speak_polish(player, base)
    log_in(player, base, users[state.decider])
    signed_in = [
        "/lobby/",
        f"/players/{users[0].username}/",
        "/accounts/password/",
        "/matches/",
        f"/match/{finished.id}/",
        f"/match/{finished.id}/replay/",
        f"/match/{match.id}/",
    ]
    found = {}
    for page, paths in ((visitor, signed_out), (player, signed_in)):
        for path in paths:
            page.goto(f"{base}{path}")
            expect(page.locator("html")).to_have_attribute("lang", "pl")
            settle(page, path, match)
            found[path] = english_on(page)
    shoot(player, "match-polish.png")
    assert {path: words for path, words in found.items() if words} == {}


def settle(page: Page, path: str, match) -> None:
    """Wait until the page's script has drawn what it draws."""
    if path == f"/match/{match.id}/":
        wait_for_seq(page, current(match.id)[0].seq)
        expect(page.locator("#hand .hand-tile, #spectating").first).to_be_visible()
    elif path.endswith("/replay/"):
        expect(page.locator("body")).to_have_attribute("data-frame", "0")
        expect(page.locator("#rp-deal")).to_have_attribute("data-verified", "true")
    elif path.startswith("/match/"):
        expect(page.locator("#overlay")).to_have_attribute("data-kind", "result")
        expect(page.locator("#overlay .deal-proof")).to_have_attribute("data-verified", "true")
    elif path == "/lobby/":
        expect(page.locator("#conn-dot")).to_have_attribute("data-state", "open")
    elif path == "/rules/":
        expect(page.locator("figure[data-drawn]")).to_have_count(11)
