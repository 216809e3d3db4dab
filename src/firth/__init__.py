"""Firth: the classic neural NLP canon, reproducibly trained and honestly evaluated."""

__version__ = "0.1.0"
