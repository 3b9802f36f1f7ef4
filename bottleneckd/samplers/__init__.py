"""Samplers, one file per resource family. Each has a ``name``, ``available()`` and ``sample()``."""
