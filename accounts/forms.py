"""Forms: registration (Django's password validators) and the sign-in forms, which say so when
the sign-in protection (accounts/lockout.py) refused the attempt."""

from __future__ import annotations

from django import forms
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm, UserCreationForm
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from accounts import lockout
from accounts.models import User


class RegisterForm(UserCreationForm):
    email = forms.EmailField(
        label=_("Email"), required=False, help_text=_("Optional; only for password resets.")
    )

    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username", "email")


class LockoutMessageMixin:
    """When axes refused the sign-in, or this failure reached a limit, the form says for how long
    sign-in is closed from here rather than that the password was wrong."""

    def clean(self):
        try:
            return super().clean()
        except forms.ValidationError:
            if not getattr(self.request, "axes_locked_out", False):
                raise
        minutes = lockout.minutes_left(self.request, self.cleaned_data.get("username"))
        message = ngettext(
            "Too many failed sign-ins from here. Try again in %(minutes)s minute.",
            "Too many failed sign-ins from here. Try again in %(minutes)s minutes.",
            minutes,
        )
        raise forms.ValidationError(message % {"minutes": minutes}, code="locked_out")


class ThrottledLoginForm(LockoutMessageMixin, AuthenticationForm):
    pass


class ThrottledAdminLoginForm(LockoutMessageMixin, AdminAuthenticationForm):
    pass
