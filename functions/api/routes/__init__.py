"""One Powertools ``Router`` per resource; :mod:`functions.api.handler` includes them all."""
