"""The provably fair deal: a documented, deterministic shuffle of the set from a 256-bit seed.

The shuffle is Fisher-Yates over ``FULL_SET`` (in its sorted order ``[0|0], [0|1], … [6|6]``),
driven by SHA-256 in counter mode: block ``k`` of the random stream is
``SHA-256(seed || k as 8 bytes big-endian)``, read as consecutive 32-bit big-endian words.
For ``i`` from 27 down to 1 a word ``w`` is drawn and rejected while
``w >= 2**32 - 2**32 % (i + 1)`` (so every index is exactly equally likely); then
``j = w % (i + 1)`` and positions ``i`` and ``j`` swap. The first 7 tiles of the result are
seat 0's hand, the next 7 seat 1's, and the last 14 are the boneyard in draw order.

The commitment published when a round is dealt is ``SHA-256(seed)`` in hex; revealing the seed
after the round lets anyone recompute both the commitment and the deal.

A round dealt with the players' contributions (docs/fairness.md) runs the same shuffle from the
*mixed seed* ``SHA-256(seed || contribution 0 || contribution 1 || round number)``: the seed and
each contribution are 32 raw bytes (from their 64 hex digits) and the round number is 8 bytes
big-endian. Records without contributions are the seed-only rounds, dealt by ``deal_from_seed``.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from .tiles import FULL_SET, HAND_SIZE, Tile

SEED_BYTES = 32
CONTRIBUTION_BYTES = 32
ROUND_NUMBER_BYTES = 8
_WORD_SPACE = 2**32

# Who produced a contribution: the player's own client, the one pass-and-play device for both
# seats, or the server for a player who sent none in time.
PLAYER, DEVICE, SERVER = "player", "device", "server"


@dataclass(frozen=True)
class Contribution:
    value: str  # 64 lowercase hex digits
    source: str  # PLAYER | DEVICE | SERVER

    @property
    def from_player(self) -> bool:
        return self.source != SERVER


@dataclass(frozen=True)
class Deal:
    """One round's deal. ``seed`` (hex) is secret until the round ends; it may be None when a
    record withholds it, in which case the deal is taken on trust from the hands and boneyard.
    A sealed deal (``sealed_deal``) has a seed and no tiles yet: the tiles follow from the seed
    and both contributions (engine/fairness.py)."""

    hands: tuple[tuple[Tile, ...], tuple[Tile, ...]]
    boneyard: tuple[Tile, ...]
    commitment: str | None = None
    seed: str | None = None
    # None for a seed-only deal; otherwise each seat's contribution, None until it is in.
    contributions: tuple[Contribution | None, Contribution | None] | None = None

    @property
    def is_sealed(self) -> bool:
        """Committed to but not dealt yet: no tile has a place."""
        return not (self.hands[0] or self.hands[1] or self.boneyard)


def new_seed() -> str:
    """A fresh seed from the operating system's CSPRNG, as 64 hex digits."""
    return secrets.token_hex(SEED_BYTES)


def commitment_of(seed_hex: str) -> str:
    return hashlib.sha256(bytes.fromhex(seed_hex)).hexdigest()


def sealed_deal(seed_hex: str) -> Deal:
    """A round's deal before the players' contributions: the server's seed and its published
    commitment; the tiles follow once both contributions are in."""
    _exact_bytes(seed_hex, SEED_BYTES, "a seed")
    return Deal(((), ()), (), commitment_of(seed_hex), seed_hex, (None, None))


def mixed_seed(seed_hex: str, contribution0: str, contribution1: str, round_no: int) -> str:
    """The seed the shuffle of a round with contributions runs from (hex)."""
    material = (
        _exact_bytes(seed_hex, SEED_BYTES, "a seed")
        + _exact_bytes(contribution0, CONTRIBUTION_BYTES, "a contribution")
        + _exact_bytes(contribution1, CONTRIBUTION_BYTES, "a contribution")
        + round_no.to_bytes(ROUND_NUMBER_BYTES, "big")
    )
    return hashlib.sha256(material).hexdigest()


def server_contribution(commitment_hex: str, seat: int) -> str:
    """What stands in for a contribution a player did not send: ``SHA-256("absent" ||
    commitment || seat as one byte)``. Fixed by the commitment, so the server cannot choose it
    after seeing the other player's contribution, and anyone can recompute it."""
    material = b"absent" + bytes.fromhex(commitment_hex) + seat.to_bytes(1, "big")
    return hashlib.sha256(material).hexdigest()


def _exact_bytes(hex_digits: str, size: int, what: str) -> bytes:
    raw = bytes.fromhex(hex_digits)
    if len(raw) != size:
        raise ValueError(f"{what} is {size} bytes ({2 * size} hex digits)")
    return raw


def _words(seed: bytes):
    counter = 0
    while True:
        block = hashlib.sha256(seed + counter.to_bytes(8, "big")).digest()
        for offset in range(0, 32, 4):
            yield int.from_bytes(block[offset : offset + 4], "big")
        counter += 1


def shuffled_set(seed_hex: str) -> list[Tile]:
    seed = _exact_bytes(seed_hex, SEED_BYTES, "a seed")
    tiles = list(FULL_SET)
    words = _words(seed)
    for i in range(len(tiles) - 1, 0, -1):
        j = uniform_below(i + 1, words)
        tiles[i], tiles[j] = tiles[j], tiles[i]
    return tiles


def uniform_below(bound: int, words) -> int:
    """An unbiased integer in ``[0, bound)`` from a stream of 32-bit words (rejection sampling)."""
    limit = _WORD_SPACE - _WORD_SPACE % bound
    word = next(words)
    while word >= limit:
        word = next(words)
    return word % bound


def deal_from_seed(seed_hex: str) -> Deal:
    """A seed-only round's deal (every round before contributions, and old records)."""
    hands, boneyard = _dealt(shuffled_set(seed_hex))
    return Deal(hands, boneyard, commitment_of(seed_hex), seed_hex)


def deal_with_contributions(
    seed_hex: str, contribution0: str, contribution1: str, round_no: int, sources=(PLAYER, PLAYER)
) -> Deal:
    """A round's deal from the server's seed and both players' contributions."""
    mixed = mixed_seed(seed_hex, contribution0, contribution1, round_no)
    hands, boneyard = _dealt(shuffled_set(mixed))
    contributions = (
        Contribution(contribution0, sources[0]),
        Contribution(contribution1, sources[1]),
    )
    return Deal(hands, boneyard, commitment_of(seed_hex), seed_hex, contributions)


def _dealt(tiles: list[Tile]):
    """Seat 0's hand, seat 1's hand (each sorted), and the boneyard in draw order."""
    hands = (
        tuple(sorted(tiles[:HAND_SIZE])),
        tuple(sorted(tiles[HAND_SIZE : 2 * HAND_SIZE])),
    )
    return hands, tuple(tiles[2 * HAND_SIZE :])
