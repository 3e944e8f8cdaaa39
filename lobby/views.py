"""The lobby page; everything live on it goes over /ws/lobby/ (lobby/consumers.py)."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from lobby import selectors


@login_required
def lobby(request):
    return render(request, "lobby/lobby.html", {"personal": selectors.personal_state(request.user)})
