"""Releasing Sundial: the wheels, the version they share, and what an upgrade replaces.

dist          `make dist`: the three wheels (sundial-scheduler, sundial-scheduler-cdk, sundial-receiver) at VERSION
keywords      writes infra/keywords.py, the Sundial construct's keyword arguments, from the settings model
"""
