"""Staff tools: browse matches; confirm or dismiss suspected timing faults (confirming voids)."""

from __future__ import annotations

from django.contrib import admin, messages

from . import services, timekeeping
from .models import Match, TimingFault


@admin.register(Match)
class MatchAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "mode",
        "rated",
        "status",
        "player0",
        "player1",
        "winner",
        "reason",
        "created_at",
    )
    list_filter = ("status", "mode", "rated", "reason")
    search_fields = ("id", "player0__username", "player1__username")
    readonly_fields = [field.name for field in Match._meta.fields if field.name != "snapshot"]
    exclude = ("snapshot",)

    def has_add_permission(self, request):
        return False  # matches are made by the lobby, never by hand

    def has_change_permission(self, request, obj=None):
        # Viewed, never saved: a save writes the whole row as the form read it, over any move
        # made meanwhile (matches/services.py is the only writer of a match).
        return False


@admin.register(TimingFault)
class TimingFaultAdmin(admin.ModelAdmin):
    list_display = ("id", "match", "kind", "status", "detected_at", "decided_by")
    list_filter = ("status", "kind")
    readonly_fields = (
        "match",
        "kind",
        "detail",
        "status",
        "detected_at",
        "decided_at",
        "decided_by",
    )
    actions = ("confirm_faults", "dismiss_faults")

    def has_add_permission(self, request):
        return False

    @admin.action(description="Confirm: void the match (no rating result)")
    def confirm_faults(self, request, queryset):
        for fault in queryset:
            services.fault_confirm(
                fault_id=fault.pk,
                decided_by=request.user.username,
                now_ms=timekeeping.now_ms_or_wall(),
            )
        messages.success(request, f"{queryset.count()} fault(s) confirmed; their matches are void.")

    @admin.action(description="Dismiss: the match stands")
    def dismiss_faults(self, request, queryset):
        for fault in queryset:
            services.fault_dismiss(fault_id=fault.pk, decided_by=request.user.username)
        messages.success(request, f"{queryset.count()} fault(s) dismissed.")
