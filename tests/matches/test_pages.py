"""The match pages' JSON: the replay viewer's frames come from replaying the record."""

from __future__ import annotations


def frames_of(client, match) -> dict:
    response = client.get(f"/match/{match.pk}/replay/frames.json")
    assert response.status_code == 200
    return response.json()


def test_a_finished_match_has_a_frame_per_deal_and_per_event(client, table):
    table.play_until(lambda state: False)
    record = table.match.record
    body = frames_of(client, table.match)
    frames = body["frames"]
    events = [e for r in record["rounds"] for e in r["events"]]
    assert [f["event"] for f in frames if f["event"] is not None] == events
    assert sum(f["event"] is None for f in frames) == len(record["rounds"])
    assert frames[-1]["view"]["balances"] == record["balances"]
    assert body["result"] == record["result"]


def test_the_round_being_played_is_left_out_of_the_replay(client, table):
    table.play_until(lambda state: state.round_no == 2 and state.seq > 0 and state.phase == "play")
    body = frames_of(client, table.match)
    assert {f["round"] for f in body["frames"]} == {1}
    live_round = table.match.record["rounds"][-1]
    assert all(tuple(map(tuple, f["view"]["hands"][0])) != tuple(map(tuple, live_round["hands"][0]))
               for f in body["frames"])  # fmt: skip


def test_a_replay_of_no_such_match_is_404(client, db):
    assert (
        client.get("/match/00000000-0000-4000-8000-000000000000/replay/frames.json").status_code
        == 404
    )
