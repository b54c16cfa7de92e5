"""The operating-system account a process runs as: what the console's identity is looked up by."""

from __future__ import annotations

import os
import pwd


def os_login() -> str:
    """The account of this process's real user id; never `LOGNAME` or `USER`, which whoever starts it may set."""
    return pwd.getpwuid(os.getuid()).pw_name
