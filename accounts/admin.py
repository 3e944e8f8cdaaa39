from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from accounts.forms import ThrottledAdminLoginForm
from accounts.models import RatingChange, User

# The admin's sign-in says so when sign-in is locked (accounts/lockout.py).
admin.site.login_form = ThrottledAdminLoginForm


@admin.register(User)
class SiteUserAdmin(UserAdmin):
    list_display = ("username", "rating", "rated_games", "on_ladder", "last_rated_at", "is_staff")
    fieldsets = (
        *UserAdmin.fieldsets,
        (
            "Rating and ladder",
            {
                "fields": (
                    "rating",
                    "rated_games",
                    "rated_wins",
                    "rated_losses",
                    "last_rated_at",
                    "on_ladder",
                    "ladder_joined_at",
                )
            },
        ),
    )


@admin.register(RatingChange)
class RatingChangeAdmin(admin.ModelAdmin):
    list_display = ("user", "match", "before", "after", "k", "at", "voided")
    list_filter = ("voided",)
    raw_id_fields = ("user", "match")
