"""Each accepted event of a live match becomes a row of its own and its record keeps the deals
and players only (``header``), so a move no longer rewrites the whole record; a match that is
over keeps its whole record."""

import django.db.models.deletion
from django.db import migrations, models

LIVE = ("waiting", "live")  # a match that is over keeps its whole record in the header


def events_apart(apps, schema_editor):
    Match = apps.get_model("matches", "Match")
    MatchEvent = apps.get_model("matches", "MatchEvent")
    for match in Match.objects.filter(status__in=LIVE).only("pk", "header").iterator(200):
        rows = []
        for number, round_record in enumerate(match.header["rounds"], start=1):
            rows += [
                MatchEvent(match_id=match.pk, seq=event["seq"], round_number=number, data=event)
                for event in round_record["events"]
            ]
            round_record["events"] = []
        MatchEvent.objects.bulk_create(rows, batch_size=500)
        Match.objects.filter(pk=match.pk).update(header=match.header)


def events_back(apps, schema_editor):
    Match = apps.get_model("matches", "Match")
    MatchEvent = apps.get_model("matches", "MatchEvent")
    for match in Match.objects.filter(status__in=LIVE).only("pk", "header").iterator(200):
        for event in MatchEvent.objects.filter(match_id=match.pk).order_by("seq"):
            match.header["rounds"][event.round_number - 1]["events"].append(event.data)
        Match.objects.filter(pk=match.pk).update(header=match.header)


class Migration(migrations.Migration):
    dependencies = [
        ("matches", "0007_deal_deadline"),
    ]

    operations = [
        migrations.RenameField(model_name="match", old_name="record", new_name="header"),
        migrations.CreateModel(
            name="MatchEvent",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("seq", models.PositiveIntegerField()),
                ("round_number", models.PositiveSmallIntegerField()),
                ("data", models.JSONField()),
                (
                    "match",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="events",
                        to="matches.match",
                    ),
                ),
            ],
            options={"ordering": ["seq"]},
        ),
        migrations.AddConstraint(
            model_name="matchevent",
            constraint=models.UniqueConstraint(
                fields=("match", "seq"), name="one_event_per_match_and_seq"
            ),
        ),
        migrations.RunPython(events_apart, events_back),
    ]
