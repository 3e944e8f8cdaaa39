"""Account URLs: /accounts/... and /leaderboard/ (a player's page, /players/<username>/, shows
matches too and so is served by matches)."""

from django.urls import path

from accounts import views

account_patterns = [
    path("register/", views.register, name="register"),
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", views.logout_view, name="logout"),
    path("password/", views.PasswordChangeView.as_view(), name="password_change"),
    path("ladder/", views.ladder, name="ladder"),
]

site_patterns = [
    path("leaderboard/", views.leaderboard, name="leaderboard"),
]
