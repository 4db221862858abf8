"""Releasing Sundial: the wheels, the version they share, and what an upgrade replaces.

keywords      writes infra/keywords.py, the Sundial construct's keyword arguments, from the settings model
"""
