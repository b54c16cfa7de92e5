#!/usr/bin/env bash
# Start the local PostgreSQL cluster when it is down (the test suite needs it at 127.0.0.1:5432).
set -uo pipefail
if pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
    exit 0
fi
if [ -d /etc/postgresql ]; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
fi
for _ in $(seq 1 30); do
    pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null && exit 0
    sleep 1
done
echo "PostgreSQL is not reachable at 127.0.0.1:5432" >&2
exit 1
