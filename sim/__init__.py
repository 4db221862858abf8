"""A discrete-event model of the deployed system (docs/scale.md): AWS's published limits as
parameters, Sundial's own domain code (buckets, shard choice, scan windows, staging delays) for
what the pipeline does. ``python -m sim`` (``make simulate``) runs the scenarios."""
