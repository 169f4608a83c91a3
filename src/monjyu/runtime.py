"""Facts about the machine the process runs on."""

from __future__ import annotations

import ctypes
import logging
import os
from logging.handlers import QueueHandler, QueueListener


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


class WorkerLogs:
    """Log records and warnings of spawned worker processes, handed to this process's handlers
    as its own records are (a CLI build: logs/build.log, the terminal only with --verbose); a
    worker's Python would otherwise print its libraries' warnings on the terminal. The pool's
    initializer calls forward_logs(*initargs); close() once the pool is shut down."""

    def __init__(self, context) -> None:
        root = logging.getLogger()
        self.queue = context.Queue()
        self.initargs = (self.queue, root.getEffectiveLevel())
        self._listener = QueueListener(self.queue, *(root.handlers or [logging.lastResort]), respect_handler_level=True)
        self._listener.start()

    def close(self) -> None:
        self._listener.stop()


def forward_logs(queue, level: int) -> None:
    """In a spawned worker: its log records and warnings go to `queue` (WorkerLogs)."""
    root = logging.getLogger()
    root.handlers = [QueueHandler(queue)]
    root.setLevel(level)
    logging.captureWarnings(True)
