from django.apps import AppConfig


class LobbyConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "lobby"

    def ready(self):
        from accounts.signals import ladder_left
        from lobby import services

        ladder_left.connect(services.ladder_left, dispatch_uid="lobby.ladder_left")
