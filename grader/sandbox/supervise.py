"""Keeping the learner's processes on a leash: nothing they start outlives the grading.

Killing a child's process group does not reach a process that called ``setsid()`` or left its
parent by a double fork. So the grader

- makes itself a *child subreaper* (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``,
  :func:`become_subreaper`): an orphaned descendant is re-parented to the grader, not to init,
  and stays findable;
- kills whole process trees, found through ``/proc``'s parent links rather than process groups
  (:func:`kill_tree`), and, once a learner process is done, every *stray*: a descendant of the
  grader that is not one of the processes it still uses (:func:`kill_strays`);
- bounds the number of processes a learner can start (:func:`process_limit`): ``RLIMIT_NPROC``
  for an unprivileged user, and, where the grader runs as root (for which the kernel ignores
  ``RLIMIT_NPROC``), a ``pids`` control group when one can be made;
- can run the learner's code as another, unprivileged user (:func:`drop_privileges`), so that it
  cannot write the grader's reports or read what the grader keeps to itself.

Everything here is Linux-specific and degrades to a no-op elsewhere.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import pwd
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36
_state = {"subreaper": False}


def become_subreaper() -> bool:
    """Make this process a child subreaper; True when it is one (Linux only).

    Only a process that starts nothing but learner processes should call this: afterwards
    :func:`kill_strays` treats every descendant it does not name as the learner's.
    """
    if _state["subreaper"]:
        return True
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        ok = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        ok = False
    _state["subreaper"] = ok
    return ok


def is_subreaper() -> bool:
    """Whether :func:`become_subreaper` succeeded in this process."""
    return _state["subreaper"]


def _parents() -> dict[int, int]:
    """``{pid: parent pid}`` for every process visible in /proc."""
    parents = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue  # gone meanwhile
        # The command name (field 2) may hold spaces and parentheses: parse after the last ')'.
        fields = stat[stat.rfind(b")") + 2:].split()
        parents[int(entry.name)] = int(fields[1])
    return parents


def descendants(pid: int, parents: dict[int, int] | None = None) -> set[int]:
    """Every process below ``pid`` in the process tree (``pid`` itself excluded)."""
    parents = _parents() if parents is None else parents
    children: dict[int, list[int]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _reap(pids: set[int]) -> None:
    """Collect the exit status of those of ``pids`` that are finished children of this process.

    Only strays are reaped here: a child that a :class:`subprocess.Popen` manages keeps its
    status for ``Popen.wait``.
    """
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


def _kill_all(pids: set[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


KILL_SECONDS = 20.0
"""How long a kill waits for killed processes to be gone (a large process takes a while to exit)."""


def _pause(round_: int) -> None:
    time.sleep(min(0.002 * (round_ + 1), 0.05))


def kill_tree(pid: int, *, include_root: bool = True, seconds: float = KILL_SECONDS,
              spare: set[int] = frozenset(), wait: bool = True) -> None:
    """SIGKILL ``pid`` and every process below it, until none is left (a fork bomb included).

    Processes are found by their parent links, so a descendant that left the process group or
    the session is found too, as long as it has not been re-parented outside the tree. The
    processes in ``spare`` are left alive (not their other descendants): the sandbox's zygote
    and the bubblewrap processes above it, while what its templates left behind is killed.

    Without ``wait``, one round: every process of the tree is sent SIGKILL and none is waited
    for (a killed sandbox takes about 10 ms to give its memory back and exit; the caller goes on
    meanwhile). Whatever it started in between is left to the next kill of an enclosing tree.
    """
    deadline = time.monotonic() + seconds
    round_ = 0
    while time.monotonic() < deadline:
        targets = {p for p in descendants(pid) if p not in spare and _alive(p)}
        if include_root and _alive(pid):
            targets.add(pid)
        if not targets:
            return
        _kill_all(targets)
        if not wait:
            return
        _pause(round_)
        round_ += 1


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:][:1] != b"Z"


def kill_strays(keep: set[int] = frozenset(), *, seconds: float = KILL_SECONDS) -> int:
    """Kill every descendant of this process outside the trees rooted at ``keep``.

    Does nothing unless this process is a subreaper (:func:`become_subreaper`), because only then
    does every descendant belong to the grading. Returns how many processes were killed.
    """
    if not _state["subreaper"]:
        return 0
    killed: set[int] = set()
    round_ = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        parents = _parents()
        kept = set(keep)
        for root in keep:
            kept |= descendants(root, parents)
        targets = {p for p in descendants(os.getpid(), parents) if p not in kept and _alive(p)}
        if not targets:
            break
        killed |= targets
        _kill_all(targets)
        _pause(round_)
        _reap(killed)
        round_ += 1
    _reap(killed)
    return len(killed)


# -- memory the grader no longer uses -------------------------------------------------------------
TRIM_SECONDS = 0.5
"""How often :func:`give_back_freed_memory` returns freed heap pages to the system."""


def give_back_freed_memory(seconds: float = TRIM_SECONDS) -> bool:
    """Return this process's freed heap memory to the system every ``seconds``, from a thread.

    glibc keeps the pages that freed tensors leave in its heaps for reuse; a grader that runs a
    suite's hidden tests (reference models, property tests' inputs) grows by a few hundred MiB
    that it no longer uses (notebook 05: 530 MiB of PSS at its peak, 400 with this). Between two
    ``malloc_trim(0)`` calls memory is reused as usual, so a loop of same-sized tensors pays no
    extra page faults. Started once per process; False where the C library has no
    ``malloc_trim`` (not glibc).
    """
    if _state.get("trimming"):
        return True
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return False
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int

    def loop() -> None:
        while True:
            time.sleep(seconds)
            trim(0)

    threading.Thread(target=loop, name="grader-malloc-trim", daemon=True).start()
    _state["trimming"] = True
    return True


# -- the process-count bound ----------------------------------------------------------------------
_PIDS_CGROUP_ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))


@dataclass
class ProcessLimit:
    """How the number of a learner's processes is bounded: ``how`` says it in words."""

    processes: int
    cgroup: Path | None = None
    how: str = ""

    def enter(self) -> None:
        """Put the calling process under the bound (run in the child, before exec)."""
        if self.cgroup is not None:
            (self.cgroup / "cgroup.procs").write_text("0\n")

    def release(self) -> None:
        """Remove the control group once its processes are gone."""
        if self.cgroup is None:
            return
        deadline = time.monotonic() + KILL_SECONDS
        while time.monotonic() < deadline:
            try:
                pids = [int(p) for p in (self.cgroup / "cgroup.procs").read_text().split()]
            except OSError:
                return
            if not pids:
                break
            _kill_all(set(pids))
            time.sleep(0.01)
        try:
            self.cgroup.rmdir()
        except OSError:
            pass


def _sweep(root: Path) -> None:
    """Remove the empty groups of graders that are gone (killed before they could clean up)."""
    for stale in root.glob("grader-*-*"):
        owner = stale.name.split("-")[1]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            try:
                stale.rmdir()  # fails, harmlessly, while processes remain in it
            except OSError:
                pass


def _pids_cgroup(processes: int) -> Path | None:
    for root in _PIDS_CGROUP_ROOTS:
        if not (root / "cgroup.procs").exists():
            continue
        if root.name != "pids" and "pids" not in _read(root / "cgroup.subtree_control"):
            continue  # a cgroup2 root where the pids controller is not enabled for children
        _sweep(root)
        group = root / f"grader-{os.getpid()}-{time.monotonic_ns()}"
        try:
            group.mkdir()
            (group / "pids.max").write_text(f"{processes}\n")
        except OSError:
            try:
                group.rmdir()
            except OSError:
                pass
            continue
        return group
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def process_limit(processes: int, *, uid: int | None = None) -> ProcessLimit:
    """The bound on the learner's process count, for processes that will run as ``uid``.

    For a user other than root, ``RLIMIT_NPROC`` (applied by the sandbox) is enforced by the
    kernel. Root is exempt from it, so for root a ``pids`` control group is made where the
    grader may; otherwise the count is bounded only by the wall-clock limits (and ``how`` says so).
    """
    effective = os.geteuid() if uid is None else uid
    if effective != 0:
        return ProcessLimit(processes, how=f"RLIMIT_NPROC={processes}")
    group = _pids_cgroup(processes)
    if group is not None:
        return ProcessLimit(processes, group, how=f"pids cgroup, max {processes}")
    return ProcessLimit(processes, how="not bounded (running as root without a pids cgroup)")


def memory_bytes(memory_limit: float | None) -> dict:
    """The ``Limits`` keyword for a ``--memory-limit`` in GiB (None: the sandbox's default)."""
    return {} if memory_limit is None else {"memory_bytes": int(memory_limit * (1 << 30))}


# -- running as another user ------------------------------------------------------------------------
@dataclass(frozen=True)
class Account:
    """The unprivileged user whose identity the learner's processes take."""

    name: str
    uid: int
    gid: int


def account(name: str) -> Account:
    """Look up user ``name``; raises LookupError with what to do when it does not exist."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise LookupError(f"no user named {name!r}: create it (useradd --system {name}) or "
                          "choose another with --run-as") from None
    if entry.pw_uid == 0:
        raise LookupError(f"--run-as {name}: that user is root; choose an unprivileged user")
    return Account(name, entry.pw_uid, entry.pw_gid)


def drop_privileges(user: Account) -> None:
    """Become ``user`` for good (run in the child, before exec; needs root)."""
    os.setgroups([])
    os.setgid(user.gid)
    os.setuid(user.uid)
    if os.getuid() == 0 or os.geteuid() == 0:  # pragma: no cover - setuid failing silently
        raise OSError(errno.EPERM, "could not give up root")


def give_to(path: Path, user: Account | None) -> None:
    """Let ``user`` own ``path`` (a scratch folder the learner's process writes in)."""
    if user is not None:
        os.chown(path, user.uid, user.gid)
