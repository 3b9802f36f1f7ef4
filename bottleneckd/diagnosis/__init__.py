"""Diagnosis: window statistics -> findings (pure rules) -> a stable verdict."""
