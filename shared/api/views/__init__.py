"""Domain objects as the API answers them (the models of :mod:`shared.api.responses`): one module
per route, and :mod:`~shared.api.views.forms` for what is answered in a request model's form."""
