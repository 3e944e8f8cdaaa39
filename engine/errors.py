"""Rejections: every illegal command gets a stable code and a human reason."""

from __future__ import annotations


class IllegalCommand(Exception):
    """Raised by ``apply`` for a command the rules do not allow; the state is unchanged."""

    def __init__(self, code: str, reason: str):
        super().__init__(f"{code}: {reason}")
        self.code = code
        self.reason = reason

    def as_dict(self) -> dict:
        return {"code": self.code, "reason": self.reason}
