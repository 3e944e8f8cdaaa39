"""Site-wide pages: the home page, the favicon and the health endpoint."""

import time

from django.http import HttpResponseRedirect, JsonResponse
from django.templatetags.static import static
from django.views.decorators.cache import never_cache
from django.views.generic import TemplateView

from accounts.selectors import leaderboard
from config.health import run_checks
from matches.selectors import live_matches


def favicon(request):
    """Browsers ask for /favicon.ico whatever the page says: send them to the icon."""
    return HttpResponseRedirect(static("favicon.svg"))


class HomeView(TemplateView):
    template_name = "home.html"
    HOME_LIST_SIZE = 5

    def get_context_data(self, **kwargs):
        """A leaderboard excerpt and the matches being played now (to watch)."""
        return {
            **super().get_context_data(**kwargs),
            "top_players": list(leaderboard()[: self.HOME_LIST_SIZE]),
            "live_matches": live_matches(limit=self.HOME_LIST_SIZE),
        }


@never_cache
async def healthz(request):
    """For load balancers: 200 while this process can serve ("ok" or "degraded"), else 503; the
    JSON names every part (config/health.py)."""
    report = await run_checks(now_s=time.time())
    return JsonResponse(report, status=503 if report["status"] == "error" else 200)


@never_cache
async def healthz_monitor(request):
    """For monitoring: 200 only when every part is ok, the worker included; else 503."""
    report = await run_checks(now_s=time.time())
    return JsonResponse(report, status=200 if report["status"] == "ok" else 503)
