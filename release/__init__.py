"""Releasing Sundial: the wheels, the version they share, and what an upgrade replaces.

dist          `make dist`: the three wheels (sundial-scheduler, sundial-scheduler-cdk, sundial-receiver) at VERSION
keywords      writes infra/keywords.py, the Sundial construct's keyword arguments, from the settings model
record        the release record (releases.json): each release's commit, and the replacements it announces
replacements  what a deploy of one template over another replaces among the tables, queues and state machine
"""
