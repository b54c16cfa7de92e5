"""Test support shared by tests/ and bench/: fakes of the outside world, harnesses, child processes."""
