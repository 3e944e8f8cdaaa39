"""Both players may act at once while a round is dealt (and either may resign at any time): a
command that waited for the match's lock behind a later-stamped one of the other player is
taken, at that one's time, never refused for arriving "in the past"."""

from __future__ import annotations

from matches import services
from tests.support.dealing import contribution


def test_contributions_applied_out_of_stamp_order_are_both_taken(dealing_table):
    table = dealing_table
    stamped_first, stamped_second = table.now + 100, table.now + 200
    # Seat 1's stamp is later, but it got the lock first.
    for seat, at_ms in ((1, stamped_second), (0, stamped_first)):
        services.match_submit(
            match_id=table.match.pk, user=table.users[seat],
            command=contribution(seat, 1), arrival_ms=at_ms,
        )  # fmt: skip
    table.match.refresh_from_db()
    events = table.match.record["rounds"][0]["events"]
    assert [(e["type"], e["seat"], e["from_player"]) for e in events] == [
        ("contribute", 1, True),
        ("contribute", 0, True),
    ]
    assert [e["at_ms"] for e in events] == [stamped_second, stamped_second]
    assert table.state.phase == "ready"


def test_a_resignation_that_waited_behind_the_opponents_move_still_ends_the_match(table):
    table.start(after_ms=1_000)
    state = table.state
    decider, other = state.decider, 1 - state.decider
    resigned_at = table.now + 500
    table.decide(after_ms=1_000)  # stamped after the resignation, applied before it
    services.match_submit(
        match_id=table.match.pk, user=table.users[other], command={"type": "resign"},
        arrival_ms=resigned_at,
    )  # fmt: skip
    table.match.refresh_from_db()
    assert (table.match.winner, table.match.reason) == (decider, "resign")
    times = [e["at_ms"] for r in table.match.record["rounds"] for e in r["events"]]
    assert times == sorted(times)
