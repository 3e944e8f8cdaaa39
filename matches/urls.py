"""Match pages: /match/<id>/ (play or watch), its replay, the archive list, the rules."""

from django.urls import path

from matches import views

urlpatterns = [
    path("match/<uuid:match_id>/", views.match_page, name="match"),
    path("match/<uuid:match_id>/replay/", views.replay_page, name="replay"),
    path("match/<uuid:match_id>/replay/frames.json", views.replay_frames_json, name="frames"),
    path("matches/", views.archive, name="archive"),
    path("rules/", views.rules, name="rules"),
    path("players/<str:username>/", views.player_profile, name="profile"),
]
