"""The site's user model, custom from the start so fields can be added later without pain."""

from django.contrib.auth.models import AbstractUser


class User(AbstractUser):
    pass
