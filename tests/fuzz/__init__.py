"""Differential fuzzing of every execution path (generator.py, differential.py)."""
