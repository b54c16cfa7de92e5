# The two set-up commands of README.md: `make run` and `make test`.
.PHONY: run test lint bench

# pytest-xdist workers: one per core; `make test TEST_WORKERS=0` runs the suite in one process
TEST_WORKERS ?= auto

run:
	@bash scripts/bootstrap.sh
	.venv/bin/quantdesk chat

test:
	@bash scripts/system-deps.sh
	@bash scripts/bootstrap.sh
	@bash scripts/ensure-postgres.sh
	.venv/bin/ruff check .
	.venv/bin/mypy
	.venv/bin/python -m pytest -q -n $(TEST_WORKERS) --dist worksteal

bench:
	@bash scripts/bootstrap.sh
	.venv/bin/python -m bench
