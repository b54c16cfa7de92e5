"""Trajectory evaluation datasets (one JSON file per workflow) and the harness that runs and compares them."""
