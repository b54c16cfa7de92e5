#!/usr/bin/env bash
# Debian packages QuantDesk needs: bubblewrap, for the sandbox's full isolation level.
set -euo pipefail
if command -v bwrap >/dev/null 2>&1; then
    exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo -n"; else
        echo "bubblewrap is not installed and this user cannot install it; the sandbox will run at basic isolation" >&2
        exit 0
    fi
fi
# Another apt run (a second clone installing at once, unattended upgrades) holds the lock: wait for it.
WAIT="-o DPkg::Lock::Timeout=600"
$SUDO apt-get $WAIT update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get $WAIT install -y -qq bubblewrap >/dev/null
