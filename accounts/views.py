"""Account pages: thin views over accounts.services and accounts.selectors."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse, reverse_lazy
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from accounts import selectors, services
from accounts.forms import RegisterForm, ThrottledLoginForm


def register(request):
    if request.user.is_authenticated:
        return redirect("lobby")
    form = RegisterForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = services.user_register(
            username=form.cleaned_data["username"],
            password=form.cleaned_data["password1"],
            email=form.cleaned_data.get("email") or "",
        )
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        messages.success(
            request, _("Welcome, %(name)s! You are signed in.") % {"name": user.username}
        )
        return redirect("lobby")
    return render(request, "accounts/register.html", {"form": form})


class LoginView(auth_views.LoginView):
    template_name = "accounts/login.html"
    authentication_form = ThrottledLoginForm
    redirect_authenticated_user = True


class PasswordChangeView(auth_views.PasswordChangeView):
    template_name = "accounts/password_change.html"

    def get_success_url(self):
        return reverse("profile", args=[self.request.user.username])

    def form_valid(self, form):
        messages.success(self.request, _("Your password was changed."))
        return super().form_valid(form)


logout_view = auth_views.LogoutView.as_view(next_page=reverse_lazy("home"))


def leaderboard(request):
    return render(request, "accounts/leaderboard.html", {
        "ranked": selectors.leaderboard_ranked(),
        "min_rated": selectors.LEADERBOARD_MIN_RATED,
        "inactive_days": selectors.LEADERBOARD_INACTIVE_DAYS,
    })  # fmt: skip


@login_required
@require_POST
def ladder(request):
    if request.POST.get("action") == "leave":
        services.ladder_leave(user=request.user)
        messages.info(request, _("You left the rated ladder. Your rating is kept."))
    else:
        services.ladder_join(user=request.user)
        messages.success(
            request, _("You joined the rated ladder: rated seeks and challenges are open to you.")
        )
    next_url = request.POST.get("next") or ""
    if next_url.startswith("/") and not next_url.startswith("//"):
        return redirect(next_url)
    return redirect("profile", request.user.username)
