"""Site-wide pages: the home page and the health endpoint."""

import time

from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.generic import TemplateView

from config.health import run_checks


class HomeView(TemplateView):
    template_name = "home.html"


@never_cache
async def healthz(request):
    """200 with each part's status, or 503 naming the parts that failed."""
    report = await run_checks(now_s=time.time())
    return JsonResponse(report, status=200 if report["status"] == "ok" else 503)
