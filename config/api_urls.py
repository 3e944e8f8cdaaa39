"""The REST API, mounted at /api/: players, the match archive, the schema and its docs."""

from django.urls import path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from accounts.apis import LeaderboardApi, PlayerDetailApi
from matches.apis import (
    LiveMatchListApi,
    MatchAnalysisApi,
    MatchDetailApi,
    MatchListApi,
    PlayerMatchExportApi,
    PlayerMatchListApi,
)

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="api-docs"), name="api-root"),
    path("leaderboard/", LeaderboardApi.as_view(), name="api-leaderboard"),
    path("players/<str:username>/", PlayerDetailApi.as_view(), name="api-player"),
    path(
        "players/<str:username>/matches/", PlayerMatchListApi.as_view(), name="api-player-matches"
    ),
    path(
        "players/<str:username>/matches/export/",
        PlayerMatchExportApi.as_view(),
        name="api-player-matches-export",
    ),
    path("matches/", MatchListApi.as_view(), name="api-matches"),
    path("matches/live/", LiveMatchListApi.as_view(), name="api-matches-live"),
    path("matches/<uuid:match_id>/", MatchDetailApi.as_view(), name="api-match"),
    path(
        "matches/<uuid:match_id>/analysis/",
        MatchAnalysisApi.as_view(),
        name="api-match-analysis",
    ),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
]
