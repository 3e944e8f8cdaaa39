"""Computer players: a random legal one and a greedy one. Both choose from ``legal_decisions``,
so they can never send an illegal command; each round they first send their contribution to the
deal."""

from __future__ import annotations

import random
import secrets

from .layout import Layout
from .legal import legal_plays, offer_range, play_command
from .rules import net_payment
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


def points_for(total: int) -> int:
    """What an end total scores (before the cap of the opponent's balance)."""
    return total if total > 0 and total % 5 == 0 else 0


class RandomBot:
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


class GreedyBot:
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
        tile, place = max(plays, key=lambda option: self._play_value(state.layout, *option))
        return play_command(tile, place)

    @staticmethod
    def _play_value(layout: Layout, tile, place) -> tuple:
        after = (
            layout.open_with(tile)
            if place is None
            else layout.play(tile, place, layout.open_value(place))
        )
        return (points_for(after.end_total()), tile[0] + tile[1], tile)

    def _bid(self, state: MatchState, seat: int) -> dict:
        worth = self.TEMPO + max(
            points_for(Layout().open_with(tile).end_total()) for tile in state.hands[seat]
        )
        offer = state.auction.offer
        # Never bid the whole balance: paying it loses the match.
        affordable = [
            amount
            for amount in offer_range(state, seat)
            if net_payment(state.jockey, seat, amount) < state.balances[seat]
            and net_payment(state.jockey, seat, amount) <= worth
        ]
        if affordable:
            return {"type": "offer", "amount": affordable[0]}
        return {"type": "waive" if offer is None else "accept"}


BOTS = {"random": RandomBot, "greedy": GreedyBot}
