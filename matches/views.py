"""Pages of matches: the live match (players and spectators), the archive list, the replay viewer
and the rules; and the JSON the replay viewer draws from. Thin: reads come from selectors and
the engine; nothing here writes."""

from __future__ import annotations

from django.conf import settings
from django.core.paginator import Paginator
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, render
from django.utils.translation import gettext as _

import engine
from accounts import charts, elo
from accounts import selectors as account_selectors
from engine.layout import Layout

from .models import Match
from .selectors import deal_proofs, match_record, recent_matches

ARCHIVE_PAGE_SIZE = 20


# --- pages ---------------------------------------------------------------------------------


def match_page(request, match_id):
    match = get_object_or_404(Match.objects.select_related("player0", "player1"), pk=match_id)
    seats = match.seats_of(request.user) if request.user.is_authenticated else []
    return render(
        request,
        "matches/match.html",
        {
            "match": match,
            "spectator": not seats,
            "page_config": {
                "matchId": str(match.id),
                "mode": match.mode,
                "players": [match.player0.username, match.player1.username],
                "computers": [match.player0.computer_level, match.player1.computer_level],
                "seats": seats,
                "apiUrl": f"/api/matches/{match.id}/",
            },
            "strings": js_strings(),
            **rules_context(),
        },
    )


def replay_page(request, match_id):
    match = get_object_or_404(Match.objects.select_related("player0", "player1"), pk=match_id)
    return render(
        request,
        "matches/replay.html",
        {
            "match": match,
            "page_config": {
                "matchId": str(match.id),
                "players": [match.player0.username, match.player1.username],
                "framesUrl": f"/match/{match.id}/replay/frames.json",
                "analysisUrl": f"/api/matches/{match.id}/analysis/",
            },
            "strings": js_strings(),
        },
    )


def archive(request):
    finished = (
        Match.objects.filter(status__in=[Match.Status.FINISHED, Match.Status.VOID])
        .select_related("player0", "player1")
        .order_by("-finished_at", "-created_at")
    )
    page = Paginator(finished, ARCHIVE_PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "matches/archive.html", {"page": page})


def rules(request):
    return render(request, "rules.html", {"strings": js_strings(), **rules_context()})


# --- JSON ----------------------------------------------------------------------------------


def replay_frames_json(request, match_id):
    """One public view per recorded event, computed by replaying the record through the rules,
    so the replay viewer needs no second copy of them. Rounds whose deal is still withheld
    (being played) are left out."""
    match = get_object_or_404(Match, pk=match_id)
    record = match_record(match)
    return JsonResponse(
        {
            "players": record["players"],
            "result": record.get("result"),
            "status": record["status"],
            "frames": replay_frames(record),
        }
    )


def deals_json(request, match_id):
    """The revealed rounds' deals with their proof (matches.selectors.deal_proofs): what the
    match page and the replay show as "deal verified"."""
    match = get_object_or_404(Match, pk=match_id)
    return JsonResponse({"deals": deal_proofs(match_record(match))})


def fairness(request):
    """How a deal is made and how anyone checks one: the page shows docs/fairness.md's own
    verifier, so there is one copy of it."""
    return render(request, "matches/fairness.html", {"verifier": standalone_verifier()})


def standalone_verifier() -> str:
    """The first ```python block of docs/fairness.md."""
    text = (settings.BASE_DIR / "docs" / "fairness.md").read_text(encoding="utf-8")
    return text.split("```python\n", 1)[1].split("```", 1)[0]


def replay_frames(record: dict) -> list[dict]:
    """A frame per deal and per event, by replaying the record through the rules; the walk stops
    at a round whose deal is still withheld (being played)."""
    frames: list[dict] = []
    engine.audit(
        record,
        on_step=lambda round_no, event, state: frames.append(_frame(state, round_no, event)),
    )
    return frames


def _frame(state, round_no: int, event: dict | None) -> dict:
    view = engine.view(state, None)
    view["hands"] = [[list(tile) for tile in hand] for hand in state.hands]
    return {"round": round_no, "event": event, "view": view}


# --- the worked examples of RULES §3, drawn by the same board renderer ----------------------


def _build(steps) -> Layout:
    layout = Layout()
    for tile, place in steps:
        tile = tuple(tile)
        if place is None:
            layout = layout.open_with(tile)
        else:
            place = (tuple(place[0]), place[1])
            layout = layout.play(tile, place, layout.open_value(place))
    return layout


SEQUENCE = [
    ((1, 4), None),
    ((1, 1), ((1, 4), "low")),
    ((4, 4), ((1, 4), "high")),
    ((3, 4), ((4, 4), "chain_b")),
    ((1, 2), ((1, 1), "chain_b")),
    ((1, 5), ((1, 1), "arm_a")),
    ((5, 5), ((1, 5), "high")),
    ((0, 5), ((5, 5), "chain_b")),
    ((1, 3), ((1, 1), "arm_b")),
]
# (figure id, steps, tiles shown as "played" in the caption)
EXAMPLES = [
    ("ex-1-4", SEQUENCE[:1], [(1, 4)]),
    ("ex-1-1", SEQUENCE[:2], [(1, 1)]),
    ("ex-6-6", [((3, 6), None), ((6, 6), ((3, 6), "high"))], [(3, 6), (6, 6)]),
    ("ex-0-0", [((0, 0), None)], [(0, 0)]),
    ("ex-4-4", SEQUENCE[:3], [(4, 4)]),
    ("ex-3-4", SEQUENCE[:4], [(3, 4)]),
    ("ex-2-2", [((2, 2), None)], [(2, 2)]),
    ("ex-1-2", SEQUENCE[:5], [(1, 2)]),
    ("ex-1-5", SEQUENCE[:6], [(1, 5)]),
    ("ex-0-5", SEQUENCE[:8], [(5, 5), (0, 5)]),
    ("ex-1-3", SEQUENCE[:9], [(1, 3)]),
]


def rules_context() -> dict:
    """What the rules text needs: the examples' layouts and which figures go where."""
    ids = [example_id for example_id, _steps, _played in EXAMPLES]
    return {"examples": worked_examples(), "ids_a": ids[:4], "ids_b": ids[4:]}


def worked_examples() -> list[dict]:
    out = []
    for example_id, steps, played in EXAMPLES:
        layout = _build(steps).to_view()
        total = layout["end_total"]
        out.append(
            {
                "id": example_id,
                "played": [list(t) for t in played],
                "layout": layout,
                "points": engine.points_for(total),
            }
        )
    return out


# --- the strings the browser client shows (rendered into the page with json_script) ---------


def js_strings() -> dict:
    return {
        "connected": _("Connected"),
        "connecting": _("Connecting…"),
        "reconnecting": _("Connection lost: reconnecting…"),
        "offline": _("Offline: reconnecting when the network is back"),
        "you": _("you"),
        "tiles_in_hand_n": _("Tiles: {n}"),
        "final_hand_of": _("{name}'s tiles at the end of the round"),
        "no_tiles_left": _("no tiles left"),
        "no_chips": _("no chips left"),
        "score_flash": _("+{points} {name}"),
        "round_scores": _("Scores of round {round}"),
        "no_scores_yet": _("No points moved yet."),
        "score_entry": _("{name} +{points} ({what})"),
        "scored_by_auction": _("accepted offer"),
        "scored_by_block": _("block"),
        "sound_on": _("Sound: on"),
        "sound_off": _("Sound: off"),
        "code_offline": _("not connected: it is sent on reconnecting"),
        "code_not_your_turn": _("the other player is to act"),
        "code_rate_limited": _("too many messages: wait a moment"),
        "boneyard": _("Boneyard"),
        "end_total": _("End total"),
        "points": _("points"),
        "bank": _("bank"),
        "delay": _("delay"),
        "low_bank": _("Under 10 s of bank!"),
        "your_turn": _("Your turn"),
        "their_turn": _("{name} to act"),
        "start": _("Start"),
        "continue": _("Continue"),
        "reveal": _("Reveal my tiles"),
        "waiting_start": _("Waiting for {name} to start (the server starts it at {time})"),
        "waiting_continue": _("Waiting for {name} to continue (the server continues at {time})"),
        "press_start": _("The clocks stand until you press Start."),
        "handover": _("Pass the device to {name}, then reveal"),
        "handover_hint": _("Your tiles stay hidden until {name} reveals them. The clocks stand."),
        "draw": _("Draw"),
        "draw_hint": _("No tile fits: draw from the boneyard."),
        "must_play": _("The drawn tile fits: play it."),
        "choose_place": _("Choose where to play {tile}"),
        "select_tile": _("Choose a tile to play."),
        "play_on": _("Play {tile} on {place}"),
        "opening_play": _("Open with {tile}"),
        "cancel": _("Cancel"),
        "auction": _("Auction for the opening"),
        "jockey": _("jockey"),
        "no_offer": _("No offer yet."),
        "current_offer": _("{name} offers {amount}."),
        "waive": _("Waive"),
        "accept": _("Accept"),
        "accept_offer": _("Accept the offer of {amount}"),
        "offer": _("Offer"),
        "raise": _("Raise"),
        "offer_amount": _("Offer {amount}"),
        "raise_amount": _("Raise to {amount}"),
        "cost_note": _("costs you {cost}"),
        "costs": _("{amount} (costs you {cost})"),
        "settlement": _("Round {round} settled"),
        "domino": _("Domino by {name}"),
        "block": _("Block"),
        "block_explained": _("Block: neither player could play or draw."),
        "pips": _("Pips left: {a} – {b}"),
        "domino_pays_nothing": _(
            "A domino moves no points for the tiles left; {name} is the jockey of the next round."
        ),
        "equal_pips": _("Equal pips: no points move."),
        "pips_rounded": _("{name}'s {pips} pips round to {rounded} (the nearest 5)."),
        "owes": _("{payer} owes {payee} {owed}."),
        "capped": _("Capped at {payer}'s balance: {points} paid."),
        "moved": _("{points} points to {name}"),
        "no_transfer": _("No points moved"),
        "result": _("Match over"),
        "winner": _("{name} wins"),
        "no_winner": _("No winner"),
        "points_n": _("{n} points"),
        "out_of_points": _("0 points: no chips left"),
        "reason_points": _("by points"),
        "reason_time": _("on time"),
        "reason_resign": _("by resignation"),
        "reason_abandon": _("by abandonment"),
        "reason_void": _("void: a timing fault of the service"),
        "rating": _("Rating {before} → {after}"),
        "replay": _("Replay this match"),
        "resign": _("Resign"),
        "resign_confirm": _("Resign this match? Your opponent wins."),
        "resign_yes": _("Yes, resign"),
        "rules": _("Rules"),
        "close": _("Close"),
        "spectating": _("You are watching this match."),
        "tiles": _("Tiles"),
        "spinner": _("Spinner"),
        "none": _("none"),
        "joins": _("Joins"),
        "open_places": _("Open places"),
        "counted": _("Counted"),
        "side_high": _("high end"),
        "side_low": _("low end"),
        "side_chain_a": _("chain side A"),
        "side_chain_b": _("chain side B"),
        "side_arm_a": _("arm A"),
        "side_arm_b": _("arm B"),
        "played": _("Played {tiles}"),
        "points_for_play": _("Points for the play: {points}."),
        "empty_layout": _("No tile played yet."),
        "ev_play": _("{name} played {tile}"),
        "ev_play_points": _("{name} played {tile}: {points} points"),
        "ev_draw": _("{name} drew a tile"),
        "ev_draw_tile": _("{name} drew {tile}"),
        "ev_pass": _("{name} passed"),
        "ev_offer": _("{name} offered {amount}"),
        "ev_accept": _("{name} accepted"),
        "ev_waive": _("{name} waived"),
        "ev_start": _("Clocks running"),
        "ev_settle": _("Round over"),
        "ev_resign": _("{name} resigned"),
        "ev_timeout": _("{name} ran out of time"),
        "ev_abandon": _("{name} abandoned"),
        "ev_void": _("The match was voided"),
        "ev_contribute": _("{name} contributed to the deal"),
        "ev_contribute_server": _("The server stood in for {name}'s contribution"),
        "deal": _("Round {round} dealt"),
        "round": _("Round {round}"),
        "balance": _("Balance"),
        "chips": _("{n} chips of 5"),
        "error": _("Refused: {reason}"),
        "first": _("First"),
        "back": _("Back"),
        "forward": _("Forward"),
        "last": _("Last"),
        "event_n": _("Event {n} of {total}"),
        "hand_of": _("{name}'s tiles"),
        "loading": _("Loading…"),
        "not_available": _("This match has no finished round to replay yet."),
        "computer_level": _("computer · {level}"),
        "dealing": _("Dealing: both devices add their randomness to the deal…"),
        "deal_checking": _("Checking the deal…"),
        "deal_verified": _("Deal verified"),
        "deal_not_verified": _("Deal NOT verified"),
        "deal_seed": _("Server seed"),
        "deal_recipe": _("how to check it yourself"),
        "contributed_by_player": _("{name}'s contribution"),
        "contributed_by_server": _("stand-in for {name}, fixed by the commitment"),
        "analysis_pending": _("The expert is analysing this match…"),
        "analysis_failed": _("This match could not be analysed."),
        "analysis_summary": _(
            "{name}: {choices} real choices, {mistakes} mistakes, {loss} expected points lost"
        ),
        "judged": _(
            "Expert: this choice was worth {expected} expected points; the best, {best}, "
            "{best_expected}."
        ),
        "judged_mistake": _(
            "Mistake (−{loss}): this choice was worth {expected} expected points; the best, "
            "{best}, {best_expected}."
        ),
        "mistake_entry": _("Round {round}: {choice} (−{loss})"),
        "no_mistakes": _("No mistake of 10 points or more."),
    }


# --- a player's page: ratings (accounts) and matches (here) --------------------------------


def player_profile(request, username: str):
    player = account_selectors.player_profile(username)
    history = account_selectors.rating_history(player)
    ratings = [history[0].before, *(change.after for change in history)] if history else []
    return render(request, "accounts/profile.html", {
        "player": player,
        "chart": charts.rating_chart(ratings),
        "history": history,
        "recent": recent_matches(player),
        "is_me": request.user.is_authenticated and request.user.pk == player.pk,
        "provisional_games": elo.PROVISIONAL_GAMES,
    })  # fmt: skip
