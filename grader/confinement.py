"""What every learner process gets: resource limits, a process-count bound, maybe another user.

:class:`Limits` says how much; :class:`Confinement` applies it in each child between fork and
exec (:mod:`grader.sandbox` for the sandboxes and templates, :mod:`grader.execute` for the
executed notebook's kernel).
"""
from __future__ import annotations

import os
import resource
import tempfile
from dataclasses import dataclass
from pathlib import Path

from grader import supervise


@dataclass(frozen=True)
class Limits:
    """Resource limits of the learner's processes (sandboxes and the executed notebook)."""

    memory_bytes: int = 6 << 30
    """Address space (RLIMIT_AS). Importing torch alone takes about 1.5 GiB of it."""
    cpu_seconds: int = 300
    """CPU time over one process's life (RLIMIT_CPU); the child is restarted after a crash."""
    file_bytes: int = 256 << 20
    """Largest file the child may write (RLIMIT_FSIZE)."""
    processes: int = 256
    """Processes and threads the learner may add (RLIMIT_NPROC, or a pids cgroup under root)."""
    start_timeout: float = 60.0
    """Seconds allowed to start the child and load the notebook's cells."""
    call_timeout: float | None = None
    """If set, caps every call's time limit (the suites' own limits apply otherwise)."""
    run_as: str | None = None
    """Run the learner's processes as this unprivileged user (the grader must be root)."""


def _limit(kind: int, value: int) -> None:
    soft, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(kind, (value, hard if hard != resource.RLIM_INFINITY else value))


def _tasks_of(uid: int) -> int:
    """Processes and threads that belong to ``uid`` now (what RLIMIT_NPROC counts)."""
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry.name}/task"))
            except OSError:
                pass
    return count


def apply_limits(limits: Limits, *, cpu: bool = True) -> None:
    """Apply ``limits`` to the current process (run in a child between fork and exec)."""
    _limit(resource.RLIMIT_AS, limits.memory_bytes)
    if cpu:
        _limit(resource.RLIMIT_CPU, limits.cpu_seconds)
    _limit(resource.RLIMIT_FSIZE, limits.file_bytes)
    _limit(resource.RLIMIT_CORE, 0)


class Confinement:
    """What every learner process gets: limits, a process-count bound, maybe another user.

    Made once per notebook (one pids cgroup, one user look-up) and applied in each child between
    fork and exec by :meth:`preexec`. :meth:`release` removes the control group at the end.
    """

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.user = supervise.account(limits.run_as) if limits.run_as else None
        if self.user is not None and os.geteuid() != 0:
            raise PermissionError(f"--run-as {limits.run_as} needs the grader to run as root")
        uid = self.user.uid if self.user is not None else os.geteuid()
        self.process_limit = supervise.process_limit(limits.processes, uid=uid)
        self._nproc = _tasks_of(uid) + limits.processes if uid != 0 else None

    def preexec(self, *, cpu: bool = True) -> None:
        """Confine the calling process (a child, before exec).

        It also becomes the out-of-memory killer's first choice, so that on a box with little
        memory (a hosted autograder) the learner's process dies rather than the grader.
        """
        apply_limits(self.limits, cpu=cpu)
        try:
            with open("/proc/self/oom_score_adj", "w") as handle:
                handle.write("1000")
        except OSError:
            pass
        self.process_limit.enter()
        if self.user is not None:
            supervise.drop_privileges(self.user)
        if self._nproc is not None:
            _limit(resource.RLIMIT_NPROC, self._nproc)

    def scratch(self, prefix: str) -> Path:
        """A fresh scratch folder the learner's process may write in."""
        folder = Path(tempfile.mkdtemp(prefix=prefix))
        supervise.give_to(folder, self.user)
        return folder

    def release(self) -> None:
        """Remove the process-count control group (its processes must be gone)."""
        self.process_limit.release()
