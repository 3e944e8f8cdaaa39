"""Site-wide pages: the home page and the health endpoint."""

import time

from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.generic import TemplateView

from config.health import run_checks


class HomeView(TemplateView):
    template_name = "home.html"
    HOME_LIST_SIZE = 5

    def get_context_data(self, **kwargs):
        """A leaderboard excerpt and the matches being played now (to watch)."""
        from accounts.selectors import leaderboard
        from matches.models import Match

        return {
            **super().get_context_data(**kwargs),
            "top_players": list(leaderboard()[: self.HOME_LIST_SIZE]),
            "live_matches": list(
                Match.objects.filter(status=Match.Status.LIVE)
                .select_related("player0", "player1")
                .order_by("-created_at")[: self.HOME_LIST_SIZE]
            ),
        }


@never_cache
async def healthz(request):
    """200 with each part's status, or 503 naming the parts that failed."""
    report = await run_checks(now_s=time.time())
    return JsonResponse(report, status=200 if report["status"] == "ok" else 503)
