"""Rejections: the one error shape of the whole service.

Every refusal, whether the rules' (``IllegalCommand``), a service's or a socket's, is a
``Rejection``: a stable ``code`` for programs, a human ``message``, and ``details`` (for
example the last cseq applied). On the wire it is always
``{"type": "error", "code": ..., "message": ..., **details}`` (docs/protocol.md).
"""

from __future__ import annotations


class Rejection(Exception):
    """Something the service will not do; nothing changed."""

    def __init__(self, code: str, message: str, **details):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.details = details

    def as_dict(self) -> dict:
        return {**self.details, "code": self.code, "message": self.message}


class IllegalCommand(Rejection):
    """Raised by ``apply`` for a command the rules do not allow; the state is unchanged."""
