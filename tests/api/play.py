"""Playing matches through the match service (as the server would), with the engine's bots."""

from __future__ import annotations

import random

import engine
from matches import services
from matches.models import Match
from matches.selectors import match_state
from tests.support.dealing import deal_by_service

STEP_MS = 1_500  # every decision well inside the delay: nobody loses on time by accident


class Table:
    """One match being played through ``match_submit``, with a fake time authority."""

    def __init__(
        self, player0, player1, *, now_ms: int, rated=False, mode=Match.Mode.ONLINE, seed=1
    ):
        self.users = {0: player0, 1: player1}
        self.now_ms = now_ms
        self.match = services.match_create(
            player0=player0, player1=player1, mode=mode, rated=rated, now_ms=now_ms
        )
        self.bot = engine.GreedyBot()
        self.rng = random.Random(seed)
        self.cseq = 0

    def state(self) -> engine.MatchState:
        self.match = Match.objects.get(pk=self.match.pk)
        return match_state(self.match)

    def submit(self, seat: int, command: dict) -> None:
        self.now_ms += STEP_MS
        self.cseq += 1
        services.match_submit(
            match_id=self.match.pk, user=self.users[seat], command=command,
            arrival_ms=self.now_ms, cseq=self.cseq,
        )  # fmt: skip

    def step(self, state: engine.MatchState) -> None:
        if state.phase == engine.DEALING:
            self.now_ms += STEP_MS
            deal_by_service(self.match, self.users, self.now_ms)
        elif engine.starter(state) is not None:
            self.submit(engine.first_to_act(state), {"type": "start"})
        else:
            self.submit(state.decider, self.bot.choose(state, state.decider, self.rng))

    def play(self, *, rounds: int | None = None, draws: int | None = None) -> Match:
        """Play until the match is over, or ``rounds`` rounds are settled and the next one is
        dealt (it waits for Continue), or ``draws`` draws have been made in the round being
        played (then it stays live)."""
        while True:
            state = self.state()
            if self.match.is_over:
                return self.match
            if rounds is not None and state.round_no > rounds and state.phase != engine.DEALING:
                return self.match
            if draws is not None and self._draws_this_round() >= draws:
                return self.match
            self.step(state)

    def _draws_this_round(self) -> int:
        events = self.match.record["rounds"][-1]["events"]
        return sum(1 for event in events if event["type"] == "draw")

    def resign(self, seat: int) -> Match:
        self.submit(seat, {"type": "resign"})
        self.state()
        return self.match

    def expire(self) -> Match:
        """Let the clock of the player to act run out (they are not connected: abandon)."""
        self.state()
        services.match_expire(match_id=self.match.pk, now_ms=self.match.deadline_ms + 1)
        self.state()
        return self.match
