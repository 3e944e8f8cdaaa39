from django.apps import AppConfig


class ClientsConfig(AppConfig):
    """Installed only for its ``botmatch`` management command."""

    name = "clients"
