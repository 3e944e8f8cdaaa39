"""Account URLs: /accounts/..., /players/<username>/, /leaderboard/."""

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
    path("players/<str:username>/", views.profile, name="profile"),
    path("leaderboard/", views.leaderboard, name="leaderboard"),
]
