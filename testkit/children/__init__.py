"""Programs the crash and concurrency tests start as child processes (python -m testkit.children.NAME)."""
