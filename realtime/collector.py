"""Python's garbage collector in a web process or the deadline keeper, set for short pauses of
its event loop.

Measured at 500 matches (docs/benchmarks.md): with the defaults, a full collection stopped a
web process for 140-270 ms every 7 s or so, walking its ~250,000 objects, of which ~157,000
were made at start-up (modules, classes, functions, URL patterns) and never die. While it
ran, no socket of that process was served: it was the largest single cause of the slowest
acks. So, once the process has started:

- ``gc.freeze()`` moves everything made so far out of every later collection (full
  collections took 70 ms instead of 190);
- young collections wait for 50,000 new objects instead of 700, and a full one for 100 of
  the middle ones instead of 10: two full collections a minute instead of nine. Cycles of
  garbage live a little longer; everything without a cycle is freed at once, as always.

The deadline keeper holds little but what start-up made: left as it was, one full collection
stopped it for 204 ms at 1,000 matches (2026-12-07), and every forfeit due then was told that
late. So it freezes its start-up too, but keeps the default thresholds: most of what it makes
(the forfeits it makes ahead, copies of a match and its state) dies in cycles, so a young
generation of 50,000 objects took 60-84 ms to collect, against 3-4 ms for one of 700.
"""

from __future__ import annotations

import gc

THRESHOLDS = (50_000, 20, 100)


def freeze_startup() -> None:
    """Leave what start-up made out of every later collection."""
    gc.collect()  # what start-up left as garbage is freed, not frozen
    gc.freeze()


def settle_after_startup() -> None:
    """A web process's collector: start-up frozen, and collections less frequent."""
    freeze_startup()
    gc.set_threshold(*THRESHOLDS)
