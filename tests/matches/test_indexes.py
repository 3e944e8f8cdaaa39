"""The indexes of the match tables: every index is one more write on every move that changes its
columns, and on PostgreSQL a write that changes no indexed column is made in place (a HOT
update) without touching any index. So a move changes no indexed column, and no index repeats
the leading columns of another."""

from __future__ import annotations

import pytest
from django.db import connection

import engine
from matches.models import Match, MatchEvent

pytestmark = pytest.mark.django_db


def indexed_column_lists(model) -> dict[str, list[str]]:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, model._meta.db_table)
    return {
        name: found["columns"]
        for name, found in constraints.items()
        if (found["index"] or found["unique"]) and found["columns"]
    }


def columns_changed_by_moves(table, moves: int = 12) -> set[str]:
    """The columns of the match row that the decisions within a round change (not its Start,
    and not a decision that ends the round or the match, which may change what the lists of
    matches are filtered by)."""
    changed = set()
    table.start(after_ms=1_000)
    round_no = table.state.round_no
    for _ in range(moves):
        before = Match.objects.filter(pk=table.match.pk).values().get()
        table.decide(after_ms=1_000)
        after = Match.objects.filter(pk=table.match.pk).values().get()
        state = table.state
        if state.round_no != round_no or state.result is not None or engine.starter(state):
            break
        changed |= {column for column, value in after.items() if before[column] != value}
    return changed


def test_a_move_changes_no_indexed_column_of_its_match(table):
    changed = columns_changed_by_moves(table)
    assert {"seq", "snapshot", "deadline_ms"} <= changed  # the moves were seen to write
    columns = {field.attname: field.column for field in Match._meta.concrete_fields}
    written = {columns[name] for name in changed}
    for name, indexed in indexed_column_lists(Match).items():
        assert not written & set(indexed), f"{name} indexes {sorted(written & set(indexed))}"


@pytest.mark.parametrize("model", [Match, MatchEvent], ids=lambda model: model.__name__)
def test_no_index_repeats_the_leading_columns_of_another(model):
    indexes = indexed_column_lists(model)
    for name, columns in indexes.items():
        for other, longer in indexes.items():
            if other != name and len(longer) > len(columns):
                assert longer[: len(columns)] != columns, f"{other} starts with {name}"
