"""The site's URLs plus a bare DRF endpoint returning a constant: the benchmark's floor."""

from django.urls import include, path
from rest_framework.response import Response
from rest_framework.views import APIView


class ConstantApi(APIView):
    """Goes through the same DRF stack (auth, throttles, rendering) and does nothing."""

    def get(self, request):
        return Response({"ok": True})


urlpatterns = [
    path("bench/constant/", ConstantApi.as_view()),
    path("", include("config.urls")),
]
