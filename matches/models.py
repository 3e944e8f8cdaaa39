"""A match is its record (ARCHIVE.md): the deals and the accepted events. While it is live, the
deals and the players are the match's ``header`` and each accepted event is a row of its own,
appended once, so a move costs the same however long the match; when it ends, the whole record
is folded into the header. The other columns are indexes and caches for queries, plus the
secrets of the round being played."""

from __future__ import annotations

import copy
import uuid

from django.conf import settings
from django.db import models


class Match(models.Model):
    class Mode(models.TextChoices):
        ONLINE = "online"
        HOTSEAT = "hotseat"

    class Status(models.TextChoices):
        WAITING = "waiting"
        LIVE = "live"
        FINISHED = "finished"
        VOID = "void"

    class DeadlineKind(models.TextChoices):
        DECISION = "decision"  # a player's clock runs out
        START = "start"  # the Start / Continue wait runs out
        DEAL = "deal"  # the wait for the players' contributions to the deal runs out

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    mode = models.CharField(max_length=8, choices=Mode.choices, default=Mode.ONLINE)
    rated = models.BooleanField(default=False)
    # status, player0 and player1 have no index of their own: each leads one of Meta.indexes.
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.WAITING)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    player0 = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", db_index=False
    )
    player1 = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", db_index=False
    )
    # The record of ARCHIVE.md. While the match is live, without its events (each round's
    # "events" is []: they are MatchEvent rows), written only when a round is dealt, revealed
    # or added; once the match is over, the whole record, events folded in, for good.
    # The round being played has its seed withheld.
    header = models.JSONField()
    seq = models.PositiveIntegerField(default=0)  # number of the last event
    # Cache of the engine state after event ``seq`` (pickled); rebuilt from the record if stale.
    snapshot = models.BinaryField(null=True, editable=False)
    secret_seed = models.CharField(max_length=64, editable=False)  # the current round's seed
    # Not indexed: every move changes it, and the deadlines are found in Redis
    # (matches/deadlines.py), rebuilt from the live matches only if Redis lost them.
    deadline_ms = models.BigIntegerField(null=True, blank=True)
    deadline_kind = models.CharField(max_length=8, choices=DeadlineKind.choices, blank=True)
    # The last client sequence number applied for each seat (duplicate commands are acknowledged),
    # and the most recent ones applied ({"0": [...], "1": [...]}): a resent cseq is a duplicate
    # only if that very cseq was applied.
    cseq0 = models.BigIntegerField(default=0)
    cseq1 = models.BigIntegerField(default=0)
    recent_cseqs = models.JSONField(default=dict)
    # The seat the computer plays (matches/computer.py), or None between people.
    computer_seat = models.PositiveSmallIntegerField(null=True, blank=True)
    # Copies of the record's final numbers, so archive lists never read the record itself.
    balances = models.JSONField(default=list)
    round_count = models.PositiveSmallIntegerField(default=1)
    winner = models.PositiveSmallIntegerField(null=True, blank=True)
    reason = models.CharField(max_length=8, blank=True)
    # Ratings around a rated result, stored with the match so a void can take them back exactly.
    rating_before0 = models.IntegerField(null=True, blank=True)
    rating_before1 = models.IntegerField(null=True, blank=True)
    rating_after0 = models.IntegerField(null=True, blank=True)
    rating_after1 = models.IntegerField(null=True, blank=True)
    # Set by a forfeit at a deadline, which is told at once, until its record is folded and its
    # ratings written (services.match_conclude), a moment later: meanwhile the record is read
    # as a live one's is, from the header and the event rows.
    end_pending = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created_at"]
        # A move changes none of the indexed columns, so PostgreSQL rewrites the row in place (a
        # HOT update) and touches no index: keep what a move changes (seq, deadline_ms, the
        # snapshot, the clocks) out of them. With eleven indexes, two of them over deadline_ms,
        # a move's write took 0.2-0.3 ms longer (docs/benchmarks.md, 2026-12-04).
        indexes = [
            models.Index(fields=["status", "-finished_at"]),
            models.Index(fields=["player0", "-created_at"]),
            models.Index(fields=["player1", "-created_at"]),
            # The sweeper's (services.conclude_pending_ends): none, or a few, at any time.
            models.Index(
                fields=["finished_at"],
                condition=models.Q(end_pending=True),
                name="match_end_pending",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.player0} v {self.player1} ({self.status})"

    def players(self):
        return (self.player0, self.player1)

    def seats_of(self, user) -> list[int]:
        """The seats ``user`` holds: none, one, or (pass-and-play) both."""
        return [
            seat
            for seat, player_id in enumerate((self.player0_id, self.player1_id))
            if player_id == user.pk
        ]

    @property
    def is_over(self) -> bool:
        return self.status in (self.Status.FINISHED, self.Status.VOID)

    @property
    def record_in_rows(self) -> bool:
        """Are the record's events still rows of their own (a live match, or an end not yet
        folded), not in the header?"""
        return not self.is_over or self.end_pending

    @property
    def record(self) -> dict:
        """The whole record of ARCHIVE.md, as stored (nothing withheld): the header with each
        round's events and the totals as they stand. A fresh dict on every read."""
        events = self._event_rows()
        if events is None:
            # Folded since this row was read (its event rows taken with the header written):
            # read again, the record whole in the header now.
            self.refresh_from_db()
            events = self._event_rows() or []
        record = copy.deepcopy(self.header)
        for event in events:  # a folded record holds its events already
            record["rounds"][event.round_number - 1]["events"].append(event.data)
        if self.end_pending:  # what the fold will write: the last round's seed revealed
            record["rounds"][-1]["seed"] = self.secret_seed
        record["balances"] = list(self.balances)
        record["status"] = self.status
        if self.is_over:
            record["result"] = {"winner": self.winner, "reason": self.reason}
        return record

    def _event_rows(self) -> list | None:
        """The event rows of the record as this row was read (up to its seq), none for a record
        folded; None if they are no longer there (folded since)."""
        if not self.record_in_rows:
            return []
        events = list(self.events.filter(seq__lte=self.seq))
        return events if (events[-1].seq if events else 0) == self.seq else None


class MatchEvent(models.Model):
    """One accepted event of a live match (ARCHIVE.md's event object), appended once, never
    changed; folded into the match's header when the match ends."""

    # Indexed by the constraint below, which it leads.
    match = models.ForeignKey(
        Match, on_delete=models.CASCADE, related_name="events", db_index=False
    )
    seq = models.PositiveIntegerField()
    round_number = models.PositiveSmallIntegerField()
    data = models.JSONField()

    class Meta:
        ordering = ["seq"]
        constraints = [
            models.UniqueConstraint(fields=["match", "seq"], name="one_event_per_match_and_seq")
        ]

    def __str__(self) -> str:
        return f"event {self.seq} of {self.match_id}"


class TimingFault(models.Model):
    """A suspected failure of the service's own timekeeping; confirming it voids the match."""

    class Kind(models.TextChoices):
        BACKWARDS = "backwards", "the time authority went backwards"
        JUMP = "jump", "the time authority jumped"
        # Kept for faults recorded before a late forfeit counted at its deadline (RULES §7).
        LATE_TIMEOUT = "late_timeout", "a timeout was processed late"
        LATE_STAMP = "late_stamp", "an arrival was stamped late"
        UNREACHABLE = "unreachable", "the time authority was unreachable"
        WEB_DOWN = "web_down", "no web process was up while a clock ran"

    class Status(models.TextChoices):
        SUSPECTED = "suspected"
        CONFIRMED = "confirmed"
        DISMISSED = "dismissed"

    match = models.ForeignKey(Match, on_delete=models.CASCADE, related_name="timing_faults")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    detail = models.JSONField(default=dict)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.SUSPECTED)
    detected_at = models.DateTimeField(auto_now_add=True)
    # One incident, however many commands saw it: how often, and when last.
    sightings = models.PositiveIntegerField(default=1)
    last_seen_at = models.DateTimeField(null=True, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.CharField(max_length=150, blank=True)  # "auto" or a staff username

    class Meta:
        ordering = ["-detected_at"]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} in {self.match_id} ({self.status})"


class MatchAnalysis(models.Model):
    """The expert's analysis of a finished match (engine.analyse): computed once, by a Celery
    task, from each player's view at the time only, and kept."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DONE = "done"
        FAILED = "failed"

    match = models.OneToOneField(
        Match, on_delete=models.CASCADE, primary_key=True, related_name="analysis"
    )
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING)
    budget_ms = models.PositiveIntegerField()
    result = models.JSONField(null=True, blank=True)
    requested_at = models.DateTimeField(auto_now_add=True)
    computed_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"analysis of {self.match_id} ({self.status})"
