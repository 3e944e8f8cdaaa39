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
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from .tiles import FULL_SET, HAND_SIZE, Tile

SEED_BYTES = 32
_WORD_SPACE = 2**32


@dataclass(frozen=True)
class Deal:
    """One round's deal. ``seed`` (hex) is secret until the round ends; it may be None when a
    record withholds it, in which case the deal is taken on trust from the hands and boneyard."""

    hands: tuple[tuple[Tile, ...], tuple[Tile, ...]]
    boneyard: tuple[Tile, ...]
    commitment: str | None = None
    seed: str | None = None


def new_seed() -> str:
    """A fresh seed from the operating system's CSPRNG, as 64 hex digits."""
    return secrets.token_hex(SEED_BYTES)


def commitment_of(seed_hex: str) -> str:
    return hashlib.sha256(bytes.fromhex(seed_hex)).hexdigest()


def _words(seed: bytes):
    counter = 0
    while True:
        block = hashlib.sha256(seed + counter.to_bytes(8, "big")).digest()
        for offset in range(0, 32, 4):
            yield int.from_bytes(block[offset : offset + 4], "big")
        counter += 1


def shuffled_set(seed_hex: str) -> list[Tile]:
    seed = bytes.fromhex(seed_hex)
    if len(seed) != SEED_BYTES:
        raise ValueError("a seed is 32 bytes (64 hex digits)")
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
    tiles = shuffled_set(seed_hex)
    hands = (
        tuple(sorted(tiles[:HAND_SIZE])),
        tuple(sorted(tiles[HAND_SIZE : 2 * HAND_SIZE])),
    )
    return Deal(hands, tuple(tiles[2 * HAND_SIZE :]), commitment_of(seed_hex), seed_hex)
