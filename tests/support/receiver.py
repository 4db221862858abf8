"""The recording receiver lives with the local runtime (the benchmark uses it too)."""

from local.receiver import Call, Receiver, running_receiver

__all__ = ["Call", "Receiver", "running_receiver"]
