"""Reads for the sockets (matches/selectors.py): what a client is sent on connecting, on hello
and on sync costs no more as the match grows."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from matches import broadcast, selectors
from matches.models import Match
from matches.selectors import match_state


def test_a_resync_loads_no_header_and_is_the_state_the_whole_row_gives(table):
    # The header is the record without its events: it grows with every round dealt, and
    # reconnecting clients (after a web process dies, all of its clients at once) ask for this.
    table.play_until(lambda state: state.round_no >= 3)
    match_id = str(table.match.pk)
    broadcast.players_of(table.match.pk)  # read once per process, from the header's players alone
    with CaptureQueriesContext(connection) as queries:
        message = selectors.state_message(match_id, 0, last_seq=5)
    header = connection.ops.quote_name("header")
    assert not [q["sql"] for q in queries.captured_queries if header in q["sql"]]
    whole = Match.objects.get(pk=match_id)
    events = selectors.events_since(whole, 5)
    expected = broadcast.state_message(whole, match_state(whole), 0, events)
    assert message == {**expected, "resync": True}
    assert len(message["events"]) == whole.seq - 5
