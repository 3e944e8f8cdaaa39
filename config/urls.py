"""Site URLs. Apps add theirs with include(), e.g. path("lobby/", include("lobby.urls"))."""

from django.contrib import admin
from django.urls import include, path

from accounts.urls import account_patterns, site_patterns
from config.views import HomeView, favicon, healthz, healthz_monitor

urlpatterns = [
    path("", HomeView.as_view(), name="home"),
    path("favicon.ico", favicon, name="favicon"),
    path("healthz", healthz, name="healthz"),
    path("healthz/monitor", healthz_monitor, name="healthz-monitor"),
    path("api/", include("config.api_urls")),  # the REST API, its schema and docs
    path("admin/", admin.site.urls),
    path("accounts/", include(account_patterns)),
    *site_patterns,
    path("lobby/", include("lobby.urls")),
    path("i18n/", include("django.conf.urls.i18n")),
    path("", include("matches.urls")),
]
