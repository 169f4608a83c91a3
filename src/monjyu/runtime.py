"""Facts about the machine the process runs on."""

from __future__ import annotations

import os


def cpu_cores() -> int:
    """The cores this process may run on (its affinity, e.g. a container's share), not the host's."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
