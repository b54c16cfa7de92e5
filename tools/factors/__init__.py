"""Factors: the saved factor library (store), value checks, and evaluation (IC, quantiles, turnover)."""
