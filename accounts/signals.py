"""What accounts announce to the apps above them (accounts know nothing of the lobby)."""

from django.dispatch import Signal

# Sent inside ladder_leave's transaction with ``user``: whatever was open to that user only as
# a rated player must go with it.
ladder_left = Signal()
