"""The match clock as pure arithmetic (RULES §7): a bank for the match plus a simple delay.

All times are integers in milliseconds. A decision that started at ``turn_start_ms`` must reach
the server strictly before ``deadline_ms = turn_start_ms + delay_ms + bank_ms``.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_BANK_MS = 120_000
DEFAULT_DELAY_MS = 10_000


@dataclass(frozen=True)
class ClockConfig:
    bank_ms: int = DEFAULT_BANK_MS
    delay_ms: int = DEFAULT_DELAY_MS

    def deadline_ms(self, turn_start_ms: int, bank_ms: int) -> int:
        return turn_start_ms + self.delay_ms + bank_ms

    def is_late(self, turn_start_ms: int, bank_ms: int, now_ms: int) -> bool:
        """A command arriving exactly at the deadline is late."""
        return now_ms >= self.deadline_ms(turn_start_ms, bank_ms)

    def bank_after(self, turn_start_ms: int, bank_ms: int, now_ms: int) -> int:
        """The bank left after a decision made at ``now_ms``: the delay is free, the rest is paid
        from the bank. Only called for commands that are not late, so it stays positive."""
        overrun = now_ms - turn_start_ms - self.delay_ms
        return bank_ms - overrun if overrun > 0 else bank_ms
