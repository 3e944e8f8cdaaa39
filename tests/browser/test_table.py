"""The match table in a real Chromium against a real Daphne: a round's end with the final layout
and both hands face up; a scoring play's points shown on the table; board and hand on one
screen at desktop and phone sizes; the rules panel beside your clock; doubles crosswise."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

import engine
from engine.analysis import decision_frames
from engine.simulate import simulate_match
from tests.browser.driver import (
    click_play,
    current,
    new_match,
    play_by_service_until,
    submit,
    wait_for_seq,
)
from tests.browser.test_match import log_in, shoot

pytestmark = pytest.mark.slow

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


def open_seat(new_page, base, match, users, seat, **options) -> Page:
    page = new_page(**options)
    log_in(page, base, users[seat])
    page.goto(f"{base}/match/{match.id}/")
    return page


def best_play(state: engine.MatchState):
    """The decider's highest-scoring (tile, place, points), as the server's view lists them."""
    legal = engine.view(state, state.decider)["legal"]
    options = [
        (play["tile"], place, score)
        for play in legal["plays"]
        for place, score in zip(play["places"], play["scores"], strict=True)
    ]
    return max(options, key=lambda option: option[2], default=None)


def out_of_view(page: Page, selector: str) -> str:
    """Why the element is not wholly in view ("" if it is): its whole box must lie inside the
    window, the page unscrolled, and nothing may cover its middle."""
    return page.locator(selector).first.evaluate(
        """el => {
            const box = el.getBoundingClientRect();
            const mid = document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2);
            if (window.scrollY !== 0) return `the page is scrolled by ${window.scrollY}px`;
            if (box.width <= 0 || box.top < 0 || box.left < 0 || box.bottom > window.innerHeight
                || box.right > window.innerWidth) {
              return `its box ${JSON.stringify(box)} leaves the window`;
            }
            if (mid === null) return "nothing is drawn at its middle";
            if (el !== mid && !el.contains(mid)) return `${mid.outerHTML.slice(0, 99)} covers it`;
            return "";
        }"""
    )


def overlapping_tiles(page: Page) -> list:
    """Pairs of board tiles whose faces overlap (by more than a pixel each way)."""
    return page.evaluate(
        """() => {
            const faces = [...document.querySelectorAll("#board .domino")].map(
                (g) => [g.dataset.tile, g.querySelector(".tile-face").getBoundingClientRect()]);
            const pairs = [];
            for (const [i, [a, A]] of faces.entries()) {
                for (const [b, B] of faces.slice(i + 1)) {
                    const x = Math.min(A.right, B.right) - Math.max(A.left, B.left);
                    const y = Math.min(A.bottom, B.bottom) - Math.max(A.top, B.top);
                    if (x > 1 && y > 1) pairs.push([a, b]);
                }
            }
            return pairs;
        }"""
    )


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_a_round_ends_with_the_final_layout_and_both_hands_face_up_until_continue(
    servers, new_page, viewport
):
    match, users = new_match()
    page = open_seat(new_page, servers.url, match, users, 0, viewport=viewport)
    match, state = play_by_service_until(
        match.id, lambda state: state.round_no == 2 and state.phase == "ready", browser_seats=(0,)
    )
    wait_for_seq(page, match.seq)
    settlement = engine.view(state, 0)["settlement"]
    overlay = page.locator("#overlay")
    expect(overlay).to_have_attribute("data-kind", "settlement")
    expect(overlay).to_contain_text("Round 1 settled")
    expect(overlay).to_contain_text(f"Pips left: ala {settlement['pips'][0]}")
    if settlement["end"] == "block" and settlement["winner"] is not None:
        expect(overlay).to_contain_text(f"round to {settlement['rounded']}")
    # The final layout stays on the table, no tile on another, and both final hands lie face up
    # beside the seats.
    expect(page.locator("#board .domino")).to_have_count(len(settlement["layout"]["tiles"]))
    assert overlapping_tiles(page) == []
    for slot, seat in (("#seat-bottom", 0), ("#seat-top", 1)):
        tiles = page.locator(f"{slot} .seat-tiles.face-up svg[data-tile]")
        expect(tiles).to_have_count(len(settlement["hands"][seat]))
        for tile in settlement["hands"][seat]:
            expect(page.locator(f'{slot} svg[data-tile="{tile[0]}-{tile[1]}"]')).to_be_visible()
    expect(page.locator("#hand-area")).to_be_hidden()
    # The round's proof is on the card, and the chips have landed (none covers what is checked).
    expect(overlay.locator(".deal-proof")).to_contain_text("Deal verified")
    expect(page.locator(".flying-chip")).to_have_count(0)
    shoot(page, f"round-end-{'phone' if viewport is PHONE else 'desktop'}.png")
    in_view = ("#board", "#seat-top .seat-tiles", "#seat-bottom .seat-tiles")
    for selector in (*in_view, "#overlay-body :is(#start, .waiting)"):
        assert out_of_view(page, selector) == "", f"{selector} at {viewport}"
    # Continue (or the other player's) clears the table for the next round.
    submit(match, engine.first_to_act(state), {"type": "start"})
    match = current(match.id)[0]
    wait_for_seq(page, match.seq)
    expect(page.locator(".seat-tiles.face-up")).to_have_count(0)
    expect(page.locator("#board .domino")).to_have_count(0)


def test_a_scoring_play_lights_its_ends_and_shows_its_points_at_the_board(servers, new_page):
    match, users = new_match()

    def scoring_play_due(state):
        option = state.phase == "play" and best_play(state)
        return bool(option) and option[2] > 0

    match, state = play_by_service_until(match.id, scoring_play_due)
    seat = state.decider
    tile, place, points = best_play(state)
    player = open_seat(new_page, servers.url, match, users, seat)
    watcher = open_seat(new_page, servers.url, match, users, 1 - seat)
    for page in (player, watcher):
        wait_for_seq(page, match.seq)
    # The round's scores so far are listed on opening the page (from the match record).
    this_round = match.record["rounds"][-1]["events"]
    scored = [e for e in this_round if e.get("points") or e.get("paid")]
    entries = player.locator("#round-scores li:not(.empty)")
    expect(entries).to_have_count(len(scored))
    place_tuple = None if place is None else (tuple(place["tile"]), place["side"])
    click_play(player, state, seat, tuple(tile), place_tuple)
    for page in (player, watcher):
        expect(page.locator("#score-flash")).to_have_text(f"+{points} {users[seat].username}")
        expect(page.locator("#board .counted-marks.scoring")).to_have_count(1)
        latest = page.locator("#round-scores li:not(.empty)")
        expect(latest).to_have_count(len(scored) + 1)
        expect(latest.last).to_contain_text(f"{users[seat].username} +{points}")
        expect(page.locator(f'.seat-panel[data-seat="{seat}"] .gain')).to_have_text(f"+{points}")
    shoot(watcher, "scoring.png")
    # The mover's move is marked for the opponent until the opponent plays.
    key = f"{tile[0]}-{tile[1]}"
    expect(watcher.locator(f'#board .domino.last-played[data-tile="{key}"]')).to_have_count(1)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_board_and_the_hand_share_one_screen_while_choosing_a_place(
    servers, new_page, viewport
):
    match, users = new_match()

    def choice_of_places(state):
        if state.phase != "play" or len(state.layout.placements) < 3:
            return False
        plays = engine.view(state, state.decider)["legal"]["plays"]
        return any(len(play["places"]) > 1 for play in plays)

    match, state = play_by_service_until(match.id, choice_of_places)
    seat = state.decider
    page = open_seat(new_page, servers.url, match, users, seat, viewport=viewport)
    wait_for_seq(page, match.seq)
    plays = engine.view(state, seat)["legal"]["plays"]
    tile = next(play["tile"] for play in plays if len(play["places"]) > 1)
    page.locator(f'#hand .hand-tile[data-tile="{tile[0]}-{tile[1]}"]').click()
    expect(page.locator("#board .place-dot.active").first).to_be_visible()
    shoot(page, "match-phone.png" if viewport is PHONE else "match-desktop.png")
    for selector in ("#board", "#hand", "#seat-bottom .bank", "#board .place-dot.active"):
        assert out_of_view(page, selector) == "", f"{selector} at {viewport}"
    # The board keeps a steady scale: a tile is drawn at a size you can read.
    tile = page.locator("#board .domino").first.evaluate("el => el.getBoundingClientRect()")
    assert max(tile["width"], tile["height"]) >= (40 if viewport is PHONE else 60)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_rules_panel_leaves_your_clock_and_balance_in_view(servers, new_page, viewport):
    match, users = new_match()
    state = play_by_service_until(match.id, lambda state: state.phase == "ready")[1]
    starter = engine.first_to_act(state)
    page = open_seat(new_page, servers.url, match, users, starter, viewport=viewport)
    submit(match, starter, {"type": "start"})
    expect(page.locator("#seat-bottom .delay")).to_have_text(re.compile(r"\+\d+\.\d s"))
    page.locator("#rules-open").click()
    expect(page.locator("#rules-panel")).to_be_visible()
    expect(page.locator("#rules-panel figure[data-drawn]")).to_have_count(11)
    shoot(page, f"rules-{'phone' if viewport is PHONE else 'desktop'}.png")
    for selector in ("#seat-bottom .bank", "#seat-bottom .balance", "#rules-panel h2", "#hand"):
        assert out_of_view(page, selector) == "", f"{selector} at {viewport}"


def test_sound_is_off_until_turned_on_and_the_choice_is_remembered(servers, new_page):
    match, users = new_match()
    page = open_seat(new_page, servers.url, match, users, 0)
    toggle = page.locator("#sound-toggle")
    expect(toggle).to_have_attribute("aria-pressed", "false")
    toggle.click()
    expect(toggle).to_have_attribute("aria-pressed", "true")
    page.reload()
    expect(page.locator("#sound-toggle")).to_have_attribute("aria-pressed", "true")


def test_every_double_lies_crosswise_to_the_tile_it_joins(servers, new_page):
    page = new_page()
    page.goto(f"{servers.url}/rules/")
    expect(page.locator("figure[data-drawn]")).to_have_count(11)
    # Each double's rotation against its neighbour's, read off the SVG transforms.
    angles = page.evaluate(
        """() => {
            const examples = JSON.parse(document.getElementById("sb-examples").textContent);
            const turn = /rotate\\((-?\\d+)\\)/;
            const angle = (g) => Number(g.getAttribute("transform").match(turn)[1]);
            const out = [];
            for (const example of examples) {
                const figure = document.querySelector(`figure[data-example="${example.id}"]`);
                for (const placed of example.layout.tiles) {
                    const [a, b] = placed.tile;
                    if (a !== b || !placed.place) continue;
                    const tile = figure.querySelector(`.domino[data-tile="${a}-${b}"]`);
                    const on = placed.place.tile;
                    const base = figure.querySelector(`.domino[data-tile="${on[0]}-${on[1]}"]`);
                    out.push([example.id, `${a}-${b}`, angle(tile), angle(base)]);
                }
            }
            return out;
        }"""
    )
    doubles = {(example, tile) for example, tile, _, _ in angles}
    assert {("ex-1-3", "4-4"), ("ex-1-3", "5-5"), ("ex-1-3", "1-1"), ("ex-6-6", "6-6")} <= doubles
    for example, tile, double, base in angles:
        assert (double - base) % 180 == 90, f"{tile} in {example} is not crosswise"


def test_the_auction_offers_quick_amounts_with_their_cost_and_sets_waive_apart(servers, new_page):
    match, users = new_match()
    match, state = play_by_service_until(match.id, lambda state: state.phase == "auction")
    first, jockey = state.decider, state.jockey
    pages = {seat: open_seat(new_page, servers.url, match, users, seat) for seat in (0, 1)}
    for page in pages.values():
        wait_for_seq(page, match.seq)
    offers = engine.view(state, first)["legal"]["offers"]
    lowest, highest = offers[0]["amount"], offers[-1]["amount"]
    quick = pages[first].locator("#quick-offers .quick-offer")
    expected = [a for a in (lowest, lowest + 5, lowest + 10, highest) if a <= highest]
    expect(quick).to_have_count(len(dict.fromkeys(expected)))
    expect(quick.first).to_contain_text(f"Offer {lowest}")
    expect(quick.first).to_contain_text(f"costs you {offers[0]['cost']}")
    waive, offer = pages[first].locator("#waive"), quick.first
    expect(waive).to_be_visible()
    style = "el => getComputedStyle(el).backgroundColor + getComputedStyle(el).borderStyle"
    assert waive.evaluate(style) != offer.evaluate(style)  # Waive does not look like an offer
    shoot(pages[first], "auction.png")
    quick.nth(1).click()
    wait_for_seq(pages[jockey], match.seq + 1)
    state = current(match.id)[1]
    assert state.auction.offer == lowest + 5
    # The jockey raises at a discount: the server's cost of each raise is shown.
    raises = engine.view(state, jockey)["legal"]["offers"]
    first_raise = pages[jockey].locator("#quick-offers .quick-offer").first
    expect(first_raise).to_contain_text(f"Raise to {raises[0]['amount']}")
    expect(first_raise).to_contain_text(f"costs you {raises[0]['cost']}")
    expect(pages[jockey].locator("#accept")).to_have_text(f"Accept the offer of {lowest + 5}")
    expect(pages[jockey].locator("#discount-note")).to_be_visible()
    # The rules open beside the auction: your clock and your choices stay in view.
    pages[jockey].locator("#rules-open").click()
    for viewport in (DESKTOP, PHONE):
        pages[jockey].set_viewport_size(viewport)
        expect(pages[jockey].locator("#rules-panel")).to_be_visible()
        shoot(pages[jockey], f"auction-rules-{'phone' if viewport is PHONE else 'desktop'}.png")
        for selector in ("#seat-bottom .bank", "#accept", "#quick-offers .quick-offer"):
            assert out_of_view(pages[jockey], selector) == "", f"{selector} at {viewport}"


def open_layouts(matches: int) -> list:
    """Every layout a player chose a play on in ``matches`` simulated greedy matches, each with
    two or more open places."""
    layouts = []
    for index in range(matches):
        record = simulate_match(index, "open-places", ("greedy", "greedy"))
        for _, _, state in decision_frames(record):
            if state.phase == "play":
                layout = engine.view(state, state.decider)["layout"]
                if len(layout["places"]) >= 2:
                    layouts.append(layout)
    return layouts


def test_no_place_dot_lies_on_another_or_on_a_tile(servers, new_page):
    """Each open place's dot is a target of its own: at a phone's and a desktop's board shape,
    no two places' touch areas (the outline of the tile a play there would lay) overlap, no two
    dots' centres are closer than a half-tile (screen rounding aside) and no dot lies on a
    tile. Two lines may end facing the same spot (seen in CI: the west chain turned twice and
    ended under the spinner's north arm, both dots in one place)."""
    layouts = open_layouts(8)
    assert len(layouts) > 1_000
    page = new_page()
    page.goto(f"{servers.url}/rules/")
    expect(page.locator("figure[data-drawn]")).to_have_count(11)
    clashes = page.evaluate(
        """async (layouts) => {
            const script = document.querySelector('script[type="module"]').src;
            const { renderBoard } = await import(new URL("./board.js", script));
            const S = 40;
            const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
            document.body.prepend(svg);
            const clashes = [];
            for (const [width, height] of [[360, 338], [760, 520]]) {
                svg.style.cssText = `display:block;width:${width}px;height:${height}px`;
                layouts.forEach((layout, index) => {
                    const options = { steady: true, dots: layout.places, onPlace: () => {} };
                    renderBoard(svg, layout, options);
                    const unit = svg.getScreenCTM().a;
                    const centre = (node) => {
                        const r = node.getBoundingClientRect();
                        return [(r.left + r.width / 2) / unit, (r.top + r.height / 2) / unit];
                    };
                    const dots = [...svg.querySelectorAll(".place-dot")].map(
                        (g) => [g.dataset.place, centre(g.querySelector("circle"))]);
                    const faces = [...svg.querySelectorAll(".domino .tile-face")].map((f) => {
                        const r = f.getBoundingClientRect();
                        return [r.left / unit, r.top / unit, r.right / unit, r.bottom / unit];
                    });
                    const rooms = [...svg.querySelectorAll(".place-dot .place-room")].map((f) => {
                        const r = f.getBoundingClientRect();
                        return [r.left / unit, r.top / unit, r.right / unit, r.bottom / unit];
                    });
                    rooms.forEach(([left, top, right, bottom], i) => {
                        for (const [l, t, r, b] of rooms.slice(i + 1)) {
                            const x = Math.min(right, r) - Math.max(left, l);
                            const y = Math.min(bottom, b) - Math.max(top, t);
                            if (x > 1 && y > 1) clashes.push([width, index, i, "touch areas"]);
                        }
                    });
                    dots.forEach(([place, [x, y]], i) => {
                        for (const [other, [u, v]] of dots.slice(i + 1)) {
                            if (Math.hypot(x - u, y - v) < 0.95 * S) {
                                clashes.push([width, index, place, other]);
                            }
                        }
                        const r = 0.3 * S;
                        for (const [left, top, right, bottom] of faces) {
                            if (x + r > left && x - r < right && y + r > top && y - r < bottom) {
                                clashes.push([width, index, place, "a tile"]);
                            }
                        }
                    });
                });
            }
            svg.remove();
            return clashes;
        }""",
        layouts,
    )
    assert clashes == []
