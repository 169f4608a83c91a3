"""Facts about the machine the process runs on."""

from __future__ import annotations

import ctypes
import os


def cpu_cores() -> int:
    """The cores this process may run on (its affinity, e.g. a container's share), not the host's."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def release_freed_memory() -> None:
    """Hand memory that native libraries freed back to the OS. glibc keeps freed blocks in its
    per-thread arenas: after LanceDB has decoded a 1M-unit table and loaded its vector index in
    its own threads, about 0.6 GB that nothing uses stays resident. Elsewhere than glibc: nothing."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    if hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)
