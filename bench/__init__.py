"""Benchmarks that print their figures: `make bench` or `python -m bench [name ...]`."""
