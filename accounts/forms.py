"""Forms: registration (Django's password validators) and a login form that throttles."""

from __future__ import annotations

import math
import time

from django import forms
from django.contrib.auth.forms import AuthenticationForm, UserCreationForm

from accounts import throttle
from accounts.models import User


class RegisterForm(UserCreationForm):
    email = forms.EmailField(required=False, help_text="Optional; only for password resets.")

    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username", "email")


class ThrottledLoginForm(AuthenticationForm):
    """Refuses any attempt while the username or the address is locked (accounts/throttle.py);
    each failed attempt counts towards the lock."""

    error_messages = {
        **AuthenticationForm.error_messages,
        "throttled": "Too many failed sign-ins. Try again in %(minutes)s minutes.",
    }

    def clean(self):
        username = self.cleaned_data.get("username") or ""
        ip = throttle.client_ip(self.request)
        now_s = self.now_s()
        wait_s = throttle.locked_for(username, ip, now_s)
        if wait_s > 0:
            raise forms.ValidationError(
                self.error_messages["throttled"],
                code="throttled",
                params={"minutes": max(1, math.ceil(wait_s / 60))},
            )
        try:
            cleaned = super().clean()
        except forms.ValidationError as error:
            if error.code == "invalid_login":
                throttle.record_failure(username, ip, now_s)
            raise
        throttle.record_success(username)
        return cleaned

    @staticmethod
    def now_s() -> float:
        return time.time()
