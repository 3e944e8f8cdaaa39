"""The expert computer player: determinized Monte Carlo over the rest of the round.

It plays with imperfect information honestly. Its only input is the sequence of views
(``view(state, seat)``) it is shown at its own decisions; ``Knowledge`` turns them into what a
careful person would know: the opponent's hand size, every tile that cannot be in it, and for
each tile still hidden, whether it may be in the opponent's hand. The opponent's draws and
passes are read from the views (hand and boneyard counts, new layout tiles): a player who drew
or passed held no tile matching any open end at that moment, and a rank opening proves that
neither hand held a higher-ranked tile.

Why determinized Monte Carlo rather than information-set MCTS: a round is short (at most about
twenty decisions) and the greedy policy is a strong, cheap model of most opponents, so the
estimate gains more from many playouts (the fast simulation, ``engine/fastsim.py``) than from a
tree. For each decision it samples deals consistent with the knowledge, plays every option in
every sampled deal (common random numbers: the options are compared on the same deals) and
plays the round out with the greedy policy for both seats; the option with the most points won
on average is chosen. An option's value is the expected change of the player's balance until
the round ends (points scored, block settlement and, in the auction, the payment).

The auction uses the same rollouts: ``V(me)`` and ``V(them)``, the expected points of the
round when the expert opens and when the opponent opens. An offer of ``x`` is worth
``V(me) - cost(x)`` (were it accepted), accepting the opponent's offer ``V(them) + their
cost``, and a waive ``V(them)``; so the expert raises (by the minimum) only while opening is
worth more than what it would receive by letting the opponent open, and it never offers its
whole balance (paying it loses the match).

The budget is turned into a number of simulated rounds by a cost model calibrated on the
2-core development machine (a playout of a whole round costs about ``ROUND_PLAYOUT_US``, a
shorter rest of a round less), not into a wall-clock deadline: that keeps every decision a
deterministic function of the views and the random generator, whatever the machine's load.
"""

from __future__ import annotations

import random

from .auction import net_payment
from .fastsim import Sim
from .layout import Layout
from .state import AUCTION, MatchState
from .tiles import FULL_SET, Tile, opening_rank
from .view import view

DEFAULT_BUDGET_MS = 20
ROUND_PLAYOUT_US = 120  # one core's time for a greedy playout of a whole round (28 tiles)
PLAYOUT_OVERHEAD_US = 25  # sampling a deal and setting up a playout, however short
# The cost of a playout grows faster than the number of tiles left: more tiles, more options.
COST_EXPONENT = 1.67

# The tiles that hold a given pip value.
_TILES_WITH = {value: frozenset(t for t in FULL_SET if value in t) for value in range(7)}
_NOTHING: frozenset = frozenset()


def _tile(raw) -> Tile:
    return (raw[0], raw[1])


def _place(raw) -> tuple[Tile, str] | None:
    return None if raw is None else (_tile(raw["tile"]), raw["side"])


def layout_of(placements) -> Layout:
    """The layout built by the view's placed tiles (``view["layout"]["tiles"]``), in order."""
    layout = Layout()
    for placement in placements:
        tile = _tile(placement["tile"])
        place = _place(placement["place"])
        if place is None:
            layout = layout.open_with(tile)
        else:
            layout = layout.play(tile, place, layout.open_value(place))
    return layout


class Knowledge:
    """What one seat knows of the current round, from the views shown at its decisions.

    The opponent's hand is a list of *slots*, oldest first (dealt, then drawn in order); each
    slot holds the tiles it cannot be. Evidence is true of the whole hand at one moment, so it
    is added to every slot then present: the older a slot, the more it excludes (the sets are
    nested), which lets ``sample`` deal the most constrained slots first and never fail. When the
    opponent plays a tile, the slot it came from is unknown; the oldest slot that allows it is
    dropped, which keeps the remaining evidence on the safe (weaker) side."""

    def __init__(self, seat: int):
        self.seat = seat
        self.round = None
        self.last: dict | None = None
        self.slots: list[frozenset] = []

    def observe(self, seen: dict) -> None:
        """Take in the seat's view at its next decision."""
        if self.last is None or seen["round"] != self.round:
            self._begin_round(seen)
        else:
            self._follow(self.last, seen)
        self.last = seen

    def _begin_round(self, seen: dict) -> None:
        self.round = seen["round"]
        self.slots = [_NOTHING] * seen["hand_counts"][1 - self.seat]
        placed = seen["layout"]["tiles"]
        if seen["opening"] == "rank" and len(placed) <= 1:
            plays = seen["legal"]["plays"]
            opening = _tile(placed[0]["tile"] if placed else plays[0]["tile"])
            # The opening tile was the highest-ranked of both hands.
            higher = frozenset(t for t in FULL_SET if opening_rank(t) > opening_rank(opening))
            self.slots = [higher] * len(self.slots)

    def _follow(self, before: dict, seen: dict) -> None:
        mine_before = {_tile(t) for t in before["hand"]}
        mine_now = {_tile(t) for t in seen["hand"]}
        drawn_by_me = len(mine_now - mine_before)
        played_by_me = mine_before - mine_now
        placed_before = len(before["layout"]["tiles"])
        new = seen["layout"]["tiles"][placed_before:]
        theirs = [_tile(p["tile"]) for p in new if _tile(p["tile"]) not in played_by_me]
        drawn_by_them = before["boneyard_count"] - seen["boneyard_count"] - drawn_by_me
        # The opponent had a turn if this seat played, or drew the boneyard empty and passed.
        their_turn = bool(played_by_me) or (
            drawn_by_me > 0 and seen["boneyard_count"] == 0 and seen["must_play"] is None
        )
        if their_turn and (drawn_by_them > 0 or not theirs):
            self.slots += [_NOTHING] * drawn_by_them
            if theirs and drawn_by_them:
                # A drawn tile that fits is played at once: their first tile was the last drawn.
                self.slots.pop()
                theirs = theirs[1:]
            at_their_turn = layout_of(seen["layout"]["tiles"][: placed_before + len(played_by_me)])
            self._lacks({value for _, _, value in at_their_turn.open_places})
        for tile in theirs:
            self._drop_slot_for(tile)

    def _lacks(self, values) -> None:
        """Every tile now in the opponent's hand matches none of ``values``."""
        excluded = frozenset().union(*(_TILES_WITH[value] for value in values))
        self.slots = [slot | excluded for slot in self.slots]

    def _drop_slot_for(self, tile: Tile) -> None:
        for index, slot in enumerate(self.slots):
            if tile not in slot:
                del self.slots[index]
                return
        self.slots.pop()  # no slot allows it: the evidence was wrong somewhere; drop the newest

    def sample(self, seen: dict, rng: random.Random) -> tuple[list[Tile], list[Tile]]:
        """A deal of the hidden tiles consistent with the knowledge: the opponent's hand and the
        boneyard in draw order."""
        known = {_tile(t) for t in seen["hand"]}
        known.update(_tile(p["tile"]) for p in seen["layout"]["tiles"])
        hidden = [t for t in FULL_SET if t not in known]
        size = seen["hand_counts"][1 - self.seat]
        slots = (self.slots + [_NOTHING] * size)[:size]
        hand = _deal_slots(slots, hidden, rng)
        if hand is None:  # the evidence contradicts itself (it cannot, if the views are true)
            hand = _deal_slots([_NOTHING] * size, hidden, rng)
        rng.shuffle(hidden)
        return hand, hidden


def _deal_slots(slots, pool: list[Tile], rng: random.Random) -> list[Tile] | None:
    """Fill the slots from ``pool`` (which loses the tiles dealt), most constrained first."""
    hand = []
    for excluded in sorted(slots, key=len, reverse=True):
        allowed = [t for t in pool if t not in excluded]
        if not allowed:
            return None
        tile = rng.choice(allowed)
        pool.remove(tile)
        hand.append(tile)
    return hand


# --- estimates ----------------------------------------------------------------------------


def options(seen: dict) -> list[dict]:
    """The decisions open to the seat whose view this is (at its decision), as commands."""
    legal = seen["legal"]
    if seen["phase"] == AUCTION:
        first = [{"type": "waive" if legal["waive"] else "accept"}]
        # The server decides at once for a player who could not offer: a decision has offers.
        offers = legal["offer"]
        amounts = range(offers["min"], offers["max"] + 1, offers["step"])
        return first + [{"type": "offer", "amount": amount} for amount in amounts]
    if legal["draw"]:
        return [{"type": "draw"}]
    return [
        {"type": "play", "tile": option["tile"], "place": place}
        for option in legal["plays"]
        for place in option["places"]
    ]


def estimate(
    seen: dict, knowledge: Knowledge, rng: random.Random, budget_ms: float
) -> list[tuple[dict, float]]:
    """Every option of the view with its expected points for the seat (the change of its balance
    until the round ends), from as many simulated rounds as ``budget_ms`` allows. The view is
    of an auction decision or of a choice of plays (a draw is never a choice)."""
    choices = options(seen)
    playouts = playouts_for(seen, budget_ms)
    if seen["phase"] == AUCTION:
        return _auction_estimates(seen, knowledge, rng, choices, playouts)
    return _play_estimates(seen, knowledge, rng, choices, playouts)


def playouts_for(seen: dict, budget_ms: float) -> int:
    """How many playouts of the rest of this round fit in ``budget_ms`` of one core."""
    tiles_left = sum(seen["hand_counts"]) + seen["boneyard_count"]
    cost_us = PLAYOUT_OVERHEAD_US + ROUND_PLAYOUT_US * (tiles_left / 28) ** COST_EXPONENT
    return max(2, round(budget_ms * 1000 / cost_us))


def _sim_for(seen: dict, knowledge: Knowledge, rng: random.Random, opener: int | None) -> Sim:
    """A sampled round: from the view's position, or from an empty layout with ``opener``."""
    seat = seen["seat"]
    theirs, boneyard = knowledge.sample(seen, rng)
    hands = [None, None]
    hands[seat] = [_tile(t) for t in seen["hand"]]
    hands[1 - seat] = theirs
    if opener is not None:
        return Sim(hands, boneyard, balances=seen["balances"], turn=opener)
    layout = seen["layout"]
    return Sim(
        hands,
        boneyard,
        balances=seen["balances"],
        turn=seat,
        places=[(_tile(p["tile"]), p["side"], p["value"]) for p in layout["places"]],
        spinner=None if layout["spinner"] is None else _tile(layout["spinner"]),
    )


def _play_estimates(seen, knowledge, rng, choices, playouts) -> list[tuple[dict, float]]:
    seat = seen["seat"]
    before = seen["balances"][seat]
    worlds = max(1, playouts // len(choices))
    totals = [0] * len(choices)
    moves = None
    for _ in range(worlds):
        world = _sim_for(seen, knowledge, rng, None)
        if moves is None:  # the open places are the view's, in the same order in every world
            moves = [(_tile(c["tile"]), _index_of(world, c["place"])) for c in choices]
        for index, move in enumerate(moves):
            sim = world.copy()
            sim.play(*move)
            sim.play_out()
            totals[index] += sim.balances[seat] - before
    return [(command, total / worlds) for command, total in zip(choices, totals, strict=True)]


def _index_of(sim: Sim, place: dict | None) -> int | None:
    if place is None:
        return None
    wanted = (_tile(place["tile"]), place["side"])
    for index, (tile, side, _, _) in enumerate(sim.places):
        if tile == wanted[0] and side == wanted[1]:
            return index
    raise ValueError(f"no open place {place!r}")


def opening_values(seen, knowledge, rng, playouts: int) -> tuple[float, float]:
    """The seat's expected points of the round if it opens, and if the opponent opens."""
    seat = seen["seat"]
    before = seen["balances"][seat]
    worlds = max(1, playouts // 2)
    totals = [0, 0]
    for _ in range(worlds):
        world = _sim_for(seen, knowledge, rng, seat)
        for index, opener in enumerate((seat, 1 - seat)):
            sim = world.copy()
            sim.turn = opener
            sim.play_out()
            totals[index] += sim.balances[seat] - before
    return totals[0] / worlds, totals[1] / worlds


def _auction_estimates(seen, knowledge, rng, choices, playouts) -> list[tuple[dict, float]]:
    seat = seen["seat"]
    jockey = seen["jockey"]
    balance = seen["balances"][seat]
    if_i_open, if_they_open = opening_values(seen, knowledge, rng, playouts)
    out = []
    for command in choices:
        if command["type"] == "waive":
            value = if_they_open
        elif command["type"] == "accept":
            offer = seen["auction"]
            value = if_they_open + net_payment(jockey, offer["offerer"], offer["offer"])
        else:
            cost = net_payment(jockey, seat, command["amount"])
            # Paying one's whole balance loses the match at once (RULES §6.5).
            value = -balance if cost >= balance else if_i_open - cost
        out.append((command, value))
    return out


# --- the player ---------------------------------------------------------------------------


class ExpertBot:
    """The expert, with the interface of the other bots (``choose(state, seat, rng)``), which it
    reads only through ``view(state, seat)``; ``choose_from_view`` is the same for a client
    that holds views only. One instance remembers what each seat has seen, so it must be shown
    every decision of a match, in order."""

    name = "expert"

    def __init__(self, budget_ms: float = DEFAULT_BUDGET_MS):
        self.budget_ms = budget_ms
        self.knowledge: dict[int, Knowledge] = {}

    def choose(self, state: MatchState, seat: int, rng: random.Random) -> dict:
        return self.choose_from_view(view(state, seat), rng)

    def observe(self, seen: dict) -> Knowledge:
        """Take in a view of an earlier decision (a server player rebuilding its memory)."""
        seat = seen["seat"]
        knowledge = self.knowledge.setdefault(seat, Knowledge(seat))
        knowledge.observe(seen)
        return knowledge

    def choose_from_view(self, seen: dict, rng: random.Random) -> dict:
        knowledge = self.observe(seen)
        choices = options(seen)
        if len(choices) == 1:
            return choices[0]
        estimates = estimate(seen, knowledge, rng, self.budget_ms)
        # Ties go to the first option: the cheaper offer, or waive/accept before any offer.
        return max(estimates, key=lambda item: item[1])[0]
