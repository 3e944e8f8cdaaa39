"""The lobby page; everything live on it goes over /ws/lobby/ (lobby/consumers.py)."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.utils.translation import gettext as _

from lobby import selectors


@login_required
def lobby(request):
    return render(
        request,
        "lobby/lobby.html",
        {"personal": selectors.personal_state(request.user), "strings": lobby_strings()},
    )


def lobby_strings() -> dict:
    """The strings lobby.js shows, in the page's language (rendered with json_script)."""
    return {
        "not_connected": _("Not connected: reconnecting…"),
        "rated": _("rated"),
        "casual": _("casual"),
        "any_rating": _("any rating"),
        "up_to": _("up to {rating}"),
        "no_seeks": _("No open seeks. Create one, or press Play now."),
        "cancel": _("Cancel"),
        "accept": _("Accept"),
        "decline": _("Decline"),
        "outside_range": _("Your rating is outside this seek's range"),
        "none": _("None."),
        "looking": _("Looking for an opponent… {seconds} s"),
        "match_starting": _("Your match is starting…"),
        "live": _("Live"),
        "reconnecting": _("Reconnecting…"),
    }
