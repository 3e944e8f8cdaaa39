"""The standalone verifier of docs/fairness.md (its first ``python`` block), run as a reader would
run it: copied into a file and started with ``python verify.py record.json``."""

import pytest

from engine.simulate import simulate
from tests.support.fairness_verifier import verifier_source, verify

from .corruptions import (
    changed_contribution,
    corrupted,
    deal_not_from_seed,
    forged_stand_in,
    tampered_commitment,
    tampered_seed,
)
from .drive import play_match


def test_the_verifier_is_short_enough_to_read_at_a_glance():
    code_lines = [line for line in verifier_source().splitlines() if line.strip()]
    assert len(code_lines) <= 42


def test_the_verifier_re_deals_every_round_of_simulated_matches(verifier, tmp_path):
    records = list(simulate(8, "verifier"))
    stand_ins = sum(
        not c["from_player"]
        for r in records
        for round_ in r["rounds"]
        for c in round_["contributions"]
    )
    assert stand_ins, "some simulated rounds should have a server stand-in"
    for record in records:
        status, lines = verify(verifier, record, tmp_path)
        assert status == 0
        assert lines == [f"round {r['number']}: deal verified" for r in record["rounds"]]


def test_the_verifier_re_deals_seed_only_rounds_the_old_way(verifier, tmp_path):
    record = play_match(5).record
    status, lines = verify(verifier, record, tmp_path)
    assert status == 0 and len(lines) == len(record["rounds"])


def test_the_verifier_skips_a_round_not_yet_revealed(verifier, tmp_path):
    record = play_match(6, fair=True).record
    record["rounds"][-1].update(seed=None, hands=None, boneyard=None)
    status, lines = verify(verifier, record, tmp_path)
    assert status == 0
    assert lines[-1].endswith("not revealed (yet), nothing to verify")


@pytest.mark.parametrize(
    "corruption, verdict",
    [
        (tampered_seed, "FAIL: the seed does not match the commitment"),
        (tampered_commitment, "FAIL: the seed does not match the commitment"),
        (deal_not_from_seed, "FAIL: the deal does not follow"),
        (changed_contribution, "FAIL: the deal does not follow"),
        (forged_stand_in, "stand-in is not the one committed to"),
    ],
    ids=lambda value: getattr(value, "__name__", "verdict"),
)
def test_the_verifier_fails_a_tampered_record(verifier, tmp_path, corruption, verdict):
    record, _ = corrupted(corruption)
    status, lines = verify(verifier, record, tmp_path)
    assert status == 1
    assert any(verdict in line for line in lines), lines


def test_the_verifier_fails_a_tampered_seed_only_round(verifier, tmp_path):
    record = play_match(7).record
    deal_not_from_seed(record)
    status, lines = verify(verifier, record, tmp_path)
    assert status == 1 and lines[0] == "round 1: FAIL: the deal does not follow"
