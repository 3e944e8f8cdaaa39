"""Clients of the service that talk to it only as a browser does, over HTTP and WebSockets:
the computer players of ``botmatch``, the end-to-end tests and the load tools. Nothing here
imports the lobby's or the matches' code: what a client knows, it was told."""
