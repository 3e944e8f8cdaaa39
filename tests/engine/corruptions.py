"""Ways to corrupt a match record, each with what ``audit`` must say about it, for the tests of
``audit``, ``python -m engine check`` and the verifier of docs/fairness.md."""

from engine import audit
from engine.replay import Problem

from .records import events_of, hand_before, pool


def first_play_of_a_turn(record):
    """A play that is the first decision of its turn (no draw before it) on a non-empty layout."""
    for round_record, index, event in events_of(record):
        before = round_record["events"][index - 1]
        if event["type"] == "play" and event["place"] is not None and before["type"] != "draw":
            return round_record, index, event
    return None


def play_after_a_draw(record):
    for round_record, index, event in events_of(record):
        if (
            event["type"] == "play"
            and index
            and round_record["events"][index - 1]["type"] == "draw"
        ):
            return round_record, index, event
    return None


# --- the corruptions: each edits a record in place, or raises StopIteration finding no spot


def wrong_points(record):
    _, _, event = next(e for e in events_of(record) if e[2]["type"] == "play" and e[2]["points"])
    event["points"] += 5


def wrong_balance(record):
    _, _, event = next(e for e in events_of(record) if e[2]["type"] == "play")
    event["balances"][0] += 5


def wrong_bank(record):
    _, _, event = next(e for e in events_of(record) if e[2]["type"] == "play")
    event["banks_ms"][1] -= 1


def wrong_ends(record):
    _, _, event = next(e for e in events_of(record) if e[2]["type"] == "play")
    event["ends"] += 1


def illegal_placement(record):
    _, _, event = first_play_of_a_turn(record)
    event["place"] = {"tile": event["tile"], "side": "high"}


def mismatched_halves(record):
    """A tile from the player's hand sharing no half with the one played there."""
    round_record, index, event = first_play_of_a_turn(record)
    hand = hand_before(round_record, index, event["seat"])
    event["tile"] = next(tile for tile in hand if not set(tile) & set(event["tile"]))


def illegal_draw(record):
    round_record, index, event = first_play_of_a_turn(record)
    round_record["events"][index] = {
        **{k: event[k] for k in ("seq", "seat", "at_ms")},
        "type": "draw",
        "tile": [0, 0],
    }


def draw_again_after_a_fitting_draw(record):
    round_record, index, event = play_after_a_draw(record)
    round_record["events"][index] = {
        **{k: event[k] for k in ("seq", "seat", "at_ms")},
        "type": "draw",
        "tile": [0, 0],
    }


def another_tile_after_a_fitting_draw(record):
    round_record, index, event = play_after_a_draw(record)
    hand = hand_before(round_record, index, event["seat"])
    event["tile"] = next(t for t in hand if t != event["tile"])


def not_the_rank_opening_tile(record):
    for round_record in record["rounds"]:
        if round_record["opening"] == "rank":
            index, event = next(
                (i, e) for i, e in enumerate(round_record["events"]) if e["type"] == "play"
            )
            hand = hand_before(round_record, index, event["seat"])
            if len(hand) > 1:
                event["tile"] = next(t for t in hand if t != event["tile"])
                return
    raise StopIteration


def wrong_opener(record):
    round_record = record["rounds"][0]
    index, event = next((i, e) for i, e in enumerate(round_record["events"]) if e["type"] == "play")
    event["seat"] = 1 - event["seat"]
    event["tile"] = hand_before(round_record, index, event["seat"])[0]


def wrong_opening_kind(record):
    record["rounds"][0]["opening"] = "auction"


def wrong_jockey(record):
    round_record = next(r for r in record["rounds"] if r["jockey"] is not None)
    round_record["jockey"] = 1 - round_record["jockey"]


def wrong_payment(record):
    _, _, event = next(
        e for e in events_of(record) if e[2]["type"] == "accept" and not e[2].get("auto")
    )
    event["paid"] += 5


def wrong_winner(record):
    record["result"]["winner"] = 1 - record["result"]["winner"]


def wrong_reason(record):
    record["result"]["reason"] = "resign"


def wrong_status(record):
    record["status"] = "live"


def wrong_final_balances(record):
    record["balances"] = (
        list(reversed(record["balances"])) if record["balances"][0] != 150 else [145, 155]
    )


def tampered_seed(record):
    seed = record["rounds"][0]["seed"]
    record["rounds"][0]["seed"] = ("0" if seed[0] != "0" else "1") + seed[1:]


def tampered_commitment(record):
    commitment = record["rounds"][0]["commitment"]
    record["rounds"][0]["commitment"] = ("0" if commitment[0] != "0" else "1") + commitment[1:]


def deal_not_from_seed(record):
    hands = record["rounds"][0]["hands"]
    hands[0][0], hands[1][0] = hands[1][0], hands[0][0]


def missing_auto_pass(record):
    for round_record, index, event in events_of(record):
        if event["type"] == "pass":
            del round_record["events"][index]
            return
    raise StopIteration


def unexpected_pass(record):
    round_record, index, event = first_play_of_a_turn(record)
    round_record["events"].insert(
        index,
        {
            "seq": event["seq"],
            "type": "pass",
            "seat": event["seat"],
            "at_ms": event["at_ms"],
            "auto": True,
        },
    )


def decision_after_the_deadline(record):
    round_record, index, event = first_play_of_a_turn(record)
    turn_start = round_record["events"][index - 1]["at_ms"]
    clock = record["clock"]
    event["at_ms"] = turn_start + clock["delay_ms"] + clock["bank_ms"] + 1


def unexpected_auto_play(record):
    _, _, event = first_play_of_a_turn(record)
    event["auto"] = True


CORRUPTIONS = [
    (wrong_points, "play: points should be"),
    (wrong_balance, "play: balances should be"),
    (wrong_bank, "play: banks_ms should be"),
    (wrong_ends, "play: ends should be"),
    (illegal_placement, "(place_not_open)"),
    (mismatched_halves, "(halves_do_not_match)"),
    (illegal_draw, "draw is illegal here: you can play, so you may not draw (can_play)"),
    (draw_again_after_a_fitting_draw, "(must_play_drawn)"),
    (another_tile_after_a_fitting_draw, "(must_play_drawn)"),
    (not_the_rank_opening_tile, "(wrong_opening_tile)"),
    (wrong_opener, "(not_your_turn)"),
    (wrong_opening_kind, "opening: expected 'rank', recorded 'auction'"),
    (wrong_jockey, "jockey: expected"),
    (wrong_payment, "accept: paid should be"),
    (wrong_winner, "result: expected"),
    (wrong_reason, "result: expected"),
    (wrong_status, "status: expected 'finished', recorded 'live'"),
    (wrong_final_balances, "balances: expected"),
    (missing_auto_pass, "pass"),
    (unexpected_pass, "unexpected pass: the rules did not call for it here"),
    (unexpected_auto_play, "unexpected play"),
    (decision_after_the_deadline, "came after its player's deadline"),
]


def corrupted(corruption) -> tuple[dict, list[Problem]]:
    """The first simulated record the corruption applies to, corrupted, and its problems."""
    for record in pool():
        try:
            corruption(record)
        except (StopIteration, TypeError):
            continue
        return record, audit(record)[1]
    raise AssertionError(f"no simulated record to corrupt with {corruption.__name__}")


# --- corruptions of the deal: the fairness proof must catch them


def fair_round_with(record, predicate):
    return next(r for r in record["rounds"] if r.get("contributions") and predicate(r))


def changed_contribution(record):
    contribution = fair_round_with(record, lambda r: True)["contributions"][0]
    contribution["value"] = ("0" if contribution["value"][0] != "0" else "1") + contribution[
        "value"
    ][1:]


def forged_stand_in(record):
    """The server put a value of its choosing where a silent player's contribution goes."""
    round_record = fair_round_with(
        record, lambda r: any(not c["from_player"] for c in r["contributions"])
    )
    forged = "ab" * 32
    stand_in = next(c for c in round_record["contributions"] if not c["from_player"])
    stand_in["value"] = forged
    event = next(
        e
        for e in round_record["events"]
        if e["type"] == "contribute" and e["seat"] == stand_in["seat"]
    )
    event["value"] = forged


def unrecorded_contribution_source(record):
    fair_round_with(record, lambda r: True)["contributions"][1]["source"] = "device"


FAIRNESS_CORRUPTIONS = [
    (tampered_seed, "the seed does not match the commitment"),
    (tampered_commitment, "the seed does not match the commitment"),
    (deal_not_from_seed, "the deal does not follow from the seed and the contributions"),
    (changed_contribution, "the deal does not follow from the seed and the contributions"),
    (forged_stand_in, "stand-in contribution is not the one its commitment fixes"),
    (unrecorded_contribution_source, "contributions: the contribute events sent"),
]
