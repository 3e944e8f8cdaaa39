"""Computer players: a random legal one and a greedy one. Each chooses either from the state
(``choose``: fast, for simulations; it reads nothing but its own hand and the table) or from its
seat's view alone (``choose_from_view``: for the server's computer player and for clients, with
the scores and costs the view carries). Both choose among legal decisions only; each round they
first send their contribution to the deal (``contribution``)."""

from __future__ import annotations

import random
import secrets

from .auction import net_payment
from .layout import Layout
from .legal import legal_plays, offer_range, play_command
from .play import play_score
from .shuffle import CONTRIBUTION_BYTES
from .state import AUCTION, MatchState


def contribution(rng: random.Random | None = None) -> dict:
    """A bot's contribution to a deal: 32 bytes from the CSPRNG, like a browser's; a simulation
    passes its own ``rng`` so that it replays exactly from its seed."""
    value = (
        secrets.token_hex(CONTRIBUTION_BYTES)
        if rng is None
        else rng.randbytes(CONTRIBUTION_BYTES).hex()
    )
    return {"type": "contribute", "value": value}


class Memoryless:
    """A bot that decides from the view at hand alone (the expert also remembers earlier
    views: ``observe`` takes them in)."""

    def observe(self, seen: dict) -> None:
        return None


class RandomBot(Memoryless):
    """Picks uniformly among the kinds of decision open to it, then among that kind's options
    (so an auction is not swamped by the many possible amounts)."""

    name = "random"

    def choose(self, state: MatchState, seat: int, rng: random.Random) -> dict:
        if state.phase == AUCTION:
            offers = offer_range(state, seat)
            if offers and rng.random() < 0.5:
                return {"type": "offer", "amount": rng.choice(offers)}
            return {"type": "waive" if state.auction.offer is None else "accept"}
        plays = legal_plays(state, seat)
        return play_command(*rng.choice(plays)) if plays else {"type": "draw"}

    def choose_from_view(self, seen: dict, rng: random.Random) -> dict:
        legal = seen["legal"]
        if seen["phase"] == AUCTION:
            if legal["offers"] and rng.random() < 0.5:
                return {"type": "offer", "amount": rng.choice(legal["offers"])["amount"]}
            return {"type": "waive" if legal["waive"] else "accept"}
        options = view_plays(seen)
        if not options:
            return {"type": "draw"}
        tile, place, _score = rng.choice(options)
        return {"type": "play", "tile": tile, "place": place}


class GreedyBot(Memoryless):
    """Takes the most points now (then sheds the heaviest tile); in the auction it offers what
    the opening is worth to it: the best opening score plus a tempo bonus."""

    name = "greedy"
    TEMPO = 10

    def choose(self, state: MatchState, seat: int, rng: random.Random) -> dict:
        if state.phase == AUCTION:
            return self._bid(state, seat)
        plays = legal_plays(state, seat)
        if not plays:
            return {"type": "draw"}
        tile, place = max(
            plays, key=lambda option: self.play_value(play_score(state.layout, *option), *option)
        )
        return play_command(tile, place)

    def choose_from_view(self, seen: dict, rng: random.Random) -> dict:
        legal = seen["legal"]
        if seen["phase"] == AUCTION:
            offers = [(offer["amount"], offer["cost"]) for offer in legal["offers"]]
            worth = self.opening_worth(seen["hand"])
            amount = self.bid(offers, seen["balances"][seen["seat"]], worth)
            if amount is not None:
                return {"type": "offer", "amount": amount}
            return {"type": "waive" if legal["waive"] else "accept"}
        options = view_plays(seen)
        if not options:
            return {"type": "draw"}
        tile, place, _score = max(options, key=lambda o: self.play_value(o[2], o[0], o[1]))
        return {"type": "play", "tile": tile, "place": place}

    @staticmethod
    def play_value(score: int, tile, place) -> tuple:
        """Most points first, then the heaviest tile (the lightest hand wins a block)."""
        return (score, tile[0] + tile[1], tuple(tile))

    @classmethod
    def opening_worth(cls, hand) -> int:
        """What winning the auction is worth to this hand: its best opening score and a tempo."""
        return cls.TEMPO + max(play_score(Layout(), tuple(tile), None) for tile in hand)

    @staticmethod
    def bid(offers, balance: int, worth: int) -> int | None:
        """The smallest offer (``offers``: (amount, cost) pairs, ascending) worth its cost and
        short of the whole balance (paying that loses the match), or None."""
        for amount, cost in offers:
            if cost < balance and cost <= worth:
                return amount
        return None

    def _bid(self, state: MatchState, seat: int) -> dict:
        offers = [
            (amount, net_payment(state.jockey, seat, amount)) for amount in offer_range(state, seat)
        ]
        amount = self.bid(offers, state.balances[seat], self.opening_worth(state.hands[seat]))
        if amount is not None:
            return {"type": "offer", "amount": amount}
        return {"type": "waive" if state.auction.offer is None else "accept"}


def view_plays(seen: dict) -> list[tuple[list, dict | None, int]]:
    """Every legal (tile, place, score) of a seat's view."""
    return [
        (option["tile"], place, score)
        for option in seen["legal"]["plays"]
        for place, score in zip(option["places"], option["scores"], strict=True)
    ]


# Imported here, after the simple bots: the expert is built on the rest of the engine.
from .expert import ExpertBot  # noqa: E402

BOTS = {"random": RandomBot, "greedy": GreedyBot, "expert": ExpertBot}
