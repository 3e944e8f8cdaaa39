"""The provably fair deal: a deterministic shuffle from a 256-bit seed (engine/shuffle.py)."""

import hashlib
import re

import pytest

from engine import commitment_of, deal_from_seed, new_seed
from engine.shuffle import shuffled_set, uniform_below
from engine.tiles import FULL_SET

SEED = "51ab" * 16


def test_the_set_is_the_28_tiles_of_double_six_low_half_first():
    assert len(FULL_SET) == 28 == len(set(FULL_SET))
    assert all(0 <= low <= high <= 6 for low, high in FULL_SET)
    assert FULL_SET[0] == (0, 0) and FULL_SET[-1] == (6, 6)


def test_the_shuffle_is_deterministic_for_a_fixed_seed():
    assert shuffled_set(SEED) == shuffled_set(SEED)
    assert deal_from_seed(SEED) == deal_from_seed(SEED)


def test_different_seeds_give_different_deals():
    assert deal_from_seed(SEED) != deal_from_seed("00" * 32)


def test_the_shuffle_follows_the_documented_sha256_counter_mode_fisher_yates():
    words = []
    for counter in range(4):
        block = hashlib.sha256(bytes.fromhex(SEED) + counter.to_bytes(8, "big")).digest()
        words += [int.from_bytes(block[i : i + 4], "big") for i in range(0, 32, 4)]
    stream = iter(words)
    tiles = list(FULL_SET)
    for i in range(27, 0, -1):
        limit = 2**32 - 2**32 % (i + 1)
        word = next(stream)
        while word >= limit:
            word = next(stream)
        j = word % (i + 1)
        tiles[i], tiles[j] = tiles[j], tiles[i]
    assert shuffled_set(SEED) == tiles


def test_the_commitment_is_the_sha256_of_the_seeds_bytes():
    assert commitment_of(SEED) == hashlib.sha256(bytes.fromhex(SEED)).hexdigest()
    assert deal_from_seed(SEED).commitment == commitment_of(SEED)
    assert deal_from_seed(SEED).seed == SEED


def test_a_deal_gives_7_and_7_and_a_boneyard_of_14_covering_the_set():
    dealt = deal_from_seed(SEED)
    assert [len(dealt.hands[0]), len(dealt.hands[1]), len(dealt.boneyard)] == [7, 7, 14]
    assert sorted(dealt.hands[0] + dealt.hands[1] + dealt.boneyard) == list(FULL_SET)
    assert all(list(hand) == sorted(hand) for hand in dealt.hands)
    tiles = shuffled_set(SEED)
    assert dealt.boneyard == tuple(tiles[14:])


def test_uniform_below_rejects_words_from_the_biased_top_of_the_range():
    # For a bound of 3 the top 2**32 % 3 == 1 word is rejected; so is nothing below it.
    top = 2**32 - 1
    assert uniform_below(3, iter([top, top, 7])) == 1
    assert uniform_below(3, iter([top - 1])) == (top - 1) % 3
    assert uniform_below(28, iter([2**32 - 4, 29])) == 1


@pytest.mark.parametrize("seed", ["00" * 31, "00" * 33, ""])
def test_a_seed_is_exactly_32_bytes(seed):
    with pytest.raises(ValueError):
        deal_from_seed(seed)


def test_new_seeds_are_64_hex_digits_from_the_csprng():
    seeds = {new_seed() for _ in range(3)}
    assert len(seeds) == 3
    assert all(re.fullmatch("[0-9a-f]{64}", seed) for seed in seeds)
