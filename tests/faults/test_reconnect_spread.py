"""The clients of a web process that dies lose their sockets in the same instant. Were each to
wait the same backoff, they would all come back in another instant, and the surviving process
would build every one of them a full state at once: each waits between half of it and all."""

from __future__ import annotations

import random

from clients.match_client import reconnect_wait_s

BACKOFF_S = (0.1, 0.2, 0.5, 1.0, 2.0)


def test_a_thousand_clients_reconnect_spread_over_the_backoff_not_in_one_instant():
    rng = random.Random(7)
    for attempt, backoff in enumerate(BACKOFF_S):
        waits = sorted(reconnect_wait_s(attempt, BACKOFF_S, rng) for _ in range(1_000))
        # Never less than half the step: a server closing each new socket gets no tight loop.
        assert backoff / 2 <= waits[0] and waits[-1] <= backoff
        assert waits[99] < backoff * 0.6 and waits[899] > backoff * 0.9  # spread, not bunched
        # No tenth of the window holds more than a sixth of the clients.
        window = [(w - backoff / 2) / (backoff / 2) for w in waits]
        per_tenth = [sum(min(int(x * 10), 9) == n for x in window) for n in range(10)]
        assert max(per_tenth) < 1_000 / 6


def test_the_backoff_stops_growing_at_its_last_step():
    rng = random.Random(7)
    assert max(reconnect_wait_s(50, BACKOFF_S, rng) for _ in range(1_000)) <= BACKOFF_S[-1]
    assert max(reconnect_wait_s(50, BACKOFF_S, rng) for _ in range(1_000)) > BACKOFF_S[-2]
