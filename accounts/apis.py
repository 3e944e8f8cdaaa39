"""The players API: the ladder ranking and a player's profile with rating history."""

from __future__ import annotations

from rest_framework.generics import ListAPIView
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.selectors import leaderboard, player_profile, rating_history
from accounts.serializers import LeaderboardEntrySerializer, PlayerSerializer

LEADERBOARD_FIELDS = ("id", "username", "rating", "rated_games", "rated_wins")


class LeaderboardPagination(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200


class LeaderboardApi(ListAPIView):
    """The ladder ranking (ties: more rated matches first, then username), page by page."""

    serializer_class = LeaderboardEntrySerializer
    pagination_class = LeaderboardPagination

    def get_queryset(self):
        return leaderboard().only(*LEADERBOARD_FIELDS)

    def list(self, request, *args, **kwargs):
        users = self.paginate_queryset(self.get_queryset())
        first = self.paginator.page.start_index()
        entries = [{"rank": rank, "user": user} for rank, user in enumerate(users, start=first)]
        return self.get_paginated_response(self.get_serializer(entries, many=True).data)


class PlayerDetailApi(APIView):
    """A player's profile and rating history."""

    serializer_class = PlayerSerializer

    def get(self, request, username):
        player = player_profile(username)
        player.history = rating_history(player)
        return Response(PlayerSerializer(player).data)
