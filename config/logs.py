"""Logging that stays readable through an outage.

channels-redis's pub/sub layer logs a full traceback from each of its shards' readers every
second while Redis is away (its reader retries once a second): 16 shards in each web process,
some 35 lines each, so a five-minute outage wrote tens of thousands of lines that buried the
few that say what happened. This project's own code logs a failure once per outage and says
when it works again; ``RepeatsQuieted`` gives a library's logger the same shape.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

QUIET_S = 10.0  # a message unheard of for this long starts a new outage: logged in full again
SUMMARY_S = 60.0  # while it repeats, one line this often says how many were held back


class RepeatsQuieted(logging.Filter):
    """Let the first record of each message (and kind of exception) through with its
    traceback, then, while it keeps coming, one line a ``SUMMARY_S`` saying how many came since
    the last; the rest are dropped. Repeats that stop before a summary is due are not counted
    anywhere: the first record said the failure began. A new kind of exception under the same
    message is let through whole. Unlocked: two threads at once may at worst let one repeat
    through or miscount one."""

    def __init__(self, name: str = "", clock=time.monotonic) -> None:
        super().__init__(name)
        self.clock = clock
        self.seen: dict[tuple[str, str, str | None], _Repeats] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        failure = record.exc_info[0].__qualname__ if record.exc_info else None
        now, key = self.clock(), (record.name, str(record.msg), failure)
        repeats = self.seen.get(key)
        if repeats is None or now - repeats.last_at >= QUIET_S:
            self.seen[key] = _Repeats(last_at=now, told_at=now)
            return True
        repeats.last_at = now
        repeats.held += 1
        if now - repeats.told_at < SUMMARY_S:
            return False
        record.msg = f"{record.msg} ({repeats.held} more since the last report)"
        record.exc_info = record.exc_text = record.stack_info = None
        repeats.told_at, repeats.held = now, 0
        return True


@dataclass
class _Repeats:
    last_at: float  # when it last came
    told_at: float  # when it was last let through
    held: int = 0  # dropped since then
