"""What every learner process gets: a view of its own, resource limits, maybe another user.

:class:`Limits` says how much; :class:`Confinement` applies it to each learner process
(:mod:`grader.sandbox.parent` for the sandboxes and templates, :mod:`grader.notebook.execute` for the executed
notebook's kernel): resource limits between fork and exec, and, where the host allows it,
bubblewrap (``bwrap``) around the command: a filesystem view with only the Python environment,
the notebook's assets and the learner-side modules of the grader read-only and a scratch folder
read-write, a private ``/tmp``, a PID namespace of its own and no network
(:func:`bwrap_arguments`). Where bubblewrap cannot run (not installed, a container without user
namespaces), the learner's processes get the limits and, with ``--run-as``, another user and file
permissions; :attr:`Confinement.description` says which held, and ``require_confinement``
refuses to grade without bubblewrap (the instructor's routes set it unless told
``--allow-unconfined``).

Every learner process also gets a minimal environment (:func:`learner_environment`): the
variables of :data:`ALLOWED_VARIABLES` taken from the grader's, and those the grader sets itself
(:data:`SET_VARIABLES`: ``HOME``, ``TMPDIR`` and matplotlib's folder in the scratch folder), never
anything else of the grader's (a token, a secret).
"""
from __future__ import annotations

import glob
import os
import resource
import tempfile
from dataclasses import dataclass
from pathlib import Path

from grader.sandbox import supervise
from grader.errors import GraderError


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
    require_confinement: bool = False
    """Refuse to grade (:class:`ConfinementUnavailable`) when bubblewrap cannot confine here: set
    on the instructor's routes (``batch``, Gradescope, the class workflows) unless the instructor
    passes ``--allow-unconfined``; a learner's own ``check`` falls back."""


# -- the learner's environment: an allow-list ------------------------------------------------------
ALLOWED_VARIABLES = (
    # locale and time zone
    "LANG", "LANGUAGE", "LC_*", "TZ",
    # where programs are found (the Python environment's own included)
    "PATH", "LD_LIBRARY_PATH",
    # thread counts of the numeric libraries
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    # Python's own switches that change no path
    "PYTHONHASHSEED", "PYTHONUTF8", "PYTHONIOENCODING",
    # Triton and CUDA (notebook 06): where it runs, and where the GPU's tools are
    "TRITON_INTERPRET", "TRITON_PTXAS_PATH", "TRITON_LIBCUDA_PATH", "CUDA_HOME",
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
)
"""The grader's variables a learner's process may see (``LC_*``: every ``LC_`` variable). Nothing
else of the grader's environment reaches the learner's code: not a token (``GH_TOKEN``), an
instructor's secret, a proxy (which may hold a password), ``XDG_*`` or ``MPLCONFIGDIR`` folders of
the grader's, ``COURSE_ASSETS`` (the grader lays the assets out itself) or the grader's own
``GRADER_*`` switches."""

SET_VARIABLES = ("HOME", "TMPDIR", "MPLCONFIGDIR", "MPLBACKEND", "PYTHONPATH", "PYTHONNOUSERSITE",
                 "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED")
"""What :func:`learner_environment` sets itself: ``HOME`` and ``TMPDIR`` are the scratch folder,
matplotlib's configuration and cache (``MPLCONFIGDIR``) a folder in it and its backend ``Agg``;
Python finds the grader's learner-side modules (``PYTHONPATH``), no user site-packages, writes no
bytecode, and hashes strings with the grader's ``PYTHONHASHSEED`` where it has one, else with
seed 0 (the same set of strings iterates in the same order on every route and every run)."""


def learner_environment(home: Path | str, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a learner's process whose scratch folder is ``home``: the
    grader's variables that :data:`ALLOWED_VARIABLES` names, then :data:`SET_VARIABLES`, then
    ``extra`` (the caller's markers, e.g. ``GRADER_SANDBOX``). This is the one place that decides
    what a learner's code can read of the grader's environment (the sandboxes, the zygote and
    its templates, and the executed notebook's kernel)."""
    exact = {name for name in ALLOWED_VARIABLES if not name.endswith("*")}
    prefixes = tuple(name[:-1] for name in ALLOWED_VARIABLES if name.endswith("*"))
    env = {key: value for key, value in os.environ.items()
           if key in exact or (prefixes and key.startswith(prefixes))}
    home = str(home)
    env.update({
        "HOME": home, "TMPDIR": home,
        "MPLCONFIGDIR": str(Path(home) / ".cache" / "matplotlib"), "MPLBACKEND": "Agg",
        "PYTHONPATH": str(GRADER_ROOT), "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0"),
    })
    env.update(extra or {})
    return env


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
        self.problem = bwrap_problem(self.user)
        """Why bubblewrap does not confine the learner's processes here (None: it does)."""
        if self.problem is not None and limits.require_confinement:
            raise ConfinementUnavailable(_refusal(self.problem))

    @property
    def confined(self) -> bool:
        """Whether learner processes run under bubblewrap."""
        return self.problem is None

    @property
    def description(self) -> str:
        """One line for the reports: which confinement held."""
        return _description(self.problem, self.user)

    def command(self, command: list[str], *, scratch: list[Path], workdir: Path,
                readable: list[Path] = (), grader_modules: tuple[str, ...] | list[str] = (),
                unset: tuple[str, ...] = ()) -> list[str]:
        """``command`` wrapped in bubblewrap (:func:`bwrap_arguments`), or as is without it."""
        if not self.confined:
            return list(command)
        return [*bwrap_arguments(writable=list(scratch), readable=list(readable), workdir=workdir,
                                 grader_modules=grader_modules, unset=unset), *command]

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


# -- the filesystem view, the PID namespace and the network: bubblewrap ----------------------------
GRADER_ROOT = Path(__file__).resolve().parents[2]
"""The folder that holds the ``grader`` package (the repository's root in a checkout)."""

_SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
"""Read-only in every view: the system's programs and shared libraries (``/usr/local`` included)."""
_SYSTEM_FILES = (
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/passwd",
    "/etc/group", "/etc/nsswitch.conf", "/etc/hosts", "/etc/fonts", "/etc/ssl/certs",
    "/etc/alternatives", "/etc/mime.types",
)
"""What the view keeps of ``/etc`` (where present): the dynamic linker's cache, names of users and
groups, fonts (matplotlib). Nothing else of ``/etc``: a hosted machine keeps secrets there."""
_PROC_READ_ONLY = ("/proc/sysrq-trigger", "/proc/bus", "/proc/fs", "/proc/irq")
"""Parts of ``/proc`` besides ``/proc/sys`` that a view keeps read-only (where present)."""
_GPU_DEVICES = ("/dev/nvidia[0-9]*", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                "/dev/nvidia-modeset", "/dev/nvidia-caps")
"""Devices a GPU notebook needs (where present; patterns); ``/sys`` is then visible read-only."""


def grader_paths(modules: tuple[str, ...] | list[str]) -> list[Path]:
    """The files and folders of the ``grader`` package that hold ``modules`` (dotted names).

    A package (``grader.fixtures``) is its whole folder; ``grader`` alone is its ``__init__.py``.
    This turns an allow-list of importable modules into the part of the package a view shows.
    """
    paths = []
    for module in modules:
        parts = module.split(".")
        if parts[0] != "grader":
            raise ValueError(f"{module} is not a module of the grader")
        base = GRADER_ROOT.joinpath(*parts)
        if len(parts) == 1:
            paths.append(base / "__init__.py")
        elif base.is_dir():  # a package: its folder, or its __init__.py where a module of it is named
            inner = any(other.startswith(module + ".") for other in modules)
            paths.append(base / "__init__.py" if inner else base)
        else:
            paths.append(base.with_suffix(".py"))
    return [path for path in paths if path.exists()]


def _python_folders() -> list[Path]:
    """The Python environment: the virtual environment and the interpreter it points at."""
    import sys

    folders = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(),
               Path(sys.executable).resolve().parent.parent}
    # Drop a folder inside another (a venv that is the base itself, or nested installs).
    return sorted(f for f in folders if not any(o != f and o in f.parents for o in folders))


def _python_launch_paths(bound: list[Path]) -> list[tuple[str, str]]:
    """``(resolved, as_launched)`` for the Python environment where the path it is launched by
    holds a symbolic link: the grader launches ``sys.executable`` as it was started
    (``/course/.venv/bin/python``, with ``.venv`` a link to an environment elsewhere), while the
    view binds the resolved environment (:func:`_python_folders`). The view then binds it at the
    launch path too, so that the interpreter finds its environment there as it does outside (its
    ``pyvenv.cfg``: ``sys.prefix`` and the environment's site-packages are the same). Empty where
    no link is on the way, or where the path lies in a folder the view binds already."""
    import sys

    found = []
    launched = [Path(sys.prefix), Path(os.path.abspath(sys.executable)).parent.parent]
    for path in dict.fromkeys(launched):
        resolved = Path(os.path.realpath(path))
        if resolved == path or any(b == path or b in path.parents for b in bound):
            continue
        found.append((str(resolved), str(path)))
    return found


def bwrap_arguments(*, writable: list[Path], readable: list[Path] = (), workdir: Path,
                    grader_modules: tuple[str, ...] | list[str] = (),
                    unset: tuple[str, ...] = ()) -> list[str]:
    """bubblewrap's options for a learner's process, up to (not including) the command.

    The view holds the system's programs and libraries, the Python environment, ``readable``
    (the notebook's assets) and the grader modules in ``grader_modules`` read-only, ``writable``
    (the scratch folder) read-write, a private ``/tmp``, ``/dev`` and ``/proc``; nothing else of
    the machine (no repository, no suites, no solutions, no other learner's folder). The process
    gets its own PID namespace (its ``/proc`` shows only its own processes; the kernel's settings
    in it read-only), IPC and UTS namespaces, no network (``--unshare-net``: a loopback of its
    own, nothing outside), no capabilities, and dies with the grader's process that started it.
    """
    args = ["bwrap", "--die-with-parent", "--unshare-pid", "--unshare-net", "--unshare-ipc",
            "--unshare-uts", "--unshare-cgroup-try", "--cap-drop", "ALL", "--hostname", "sandbox"]
    for folder in _SYSTEM_FOLDERS:
        if os.path.islink(folder):
            args += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            args += ["--ro-bind", folder, folder]
    for path in _SYSTEM_FILES:
        args += ["--ro-bind-try", path, path]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    # Without capabilities, a process that is root may still write the kernel's settings: its
    # /proc keeps them read-only (as container runtimes do).
    args += ["--ro-bind", "/proc/sys", "/proc/sys"]
    for path in _PROC_READ_ONLY:
        args += ["--ro-bind-try", path, path]
    devices = sorted(path for pattern in _GPU_DEVICES for path in glob.glob(pattern))
    if devices:
        for device in devices:
            args += ["--dev-bind", device, device]
        args += ["--ro-bind", "/sys", "/sys"]
    python = _python_folders()
    for folder in python:
        args += ["--ro-bind", str(folder), str(folder)]
    system = [Path(f) for f in _SYSTEM_FOLDERS if os.path.isdir(f)]
    for resolved, launched in _python_launch_paths([*system, *python]):
        args += ["--ro-bind", resolved, launched]
    for path in [*grader_paths(grader_modules), *readable]:
        args += ["--ro-bind", str(path), str(path)]
    for path in readable:
        args += mask_grader_only(Path(path), Path(path))
    for path in writable:
        args += ["--bind", str(path), str(path)]
    args += ["--chdir", str(workdir), "--setenv", "HOME", str(workdir),
             "--setenv", "TMPDIR", str(workdir)]
    for name in unset:
        args += ["--unsetenv", name]
    return args


def mask_grader_only(assets: Path, seen_as: Path) -> list[str]:
    """bubblewrap's options that hide the grader-only files of the assets folder ``assets``
    (:data:`grader.assets.GRADER_ONLY`), bound in the view at ``seen_as``: each becomes empty."""
    from grader.assets import GRADER_ONLY

    return [arg for name in GRADER_ONLY if (assets / name).exists()
            for arg in ("--ro-bind", "/dev/null", str(seen_as / name))]


_PROBES: dict[object, str | None] = {}


def bwrap_problem(user: "supervise.Account | None" = None) -> str | None:
    """Why bubblewrap cannot confine a learner's process here, or None if it can.

    Tried once per grader process (and user): ``bwrap`` must exist and start a Python with the
    options :func:`bwrap_arguments` gives (namespaces included: a container without user
    namespaces, or one that forbids mounts, fails here). ``GRADER_NO_BWRAP=1`` pretends it cannot
    (to test the fallback).
    """
    off = os.environ.get("GRADER_NO_BWRAP") == "1"
    key = (user.uid if user is not None else None, off)
    if key in _PROBES:
        return _PROBES[key]
    import shutil
    import subprocess
    import sys

    if off:
        problem = "turned off (GRADER_NO_BWRAP=1)"
    elif shutil.which("bwrap") is None:
        problem = "bwrap is not installed (Debian and Ubuntu: apt-get install bubblewrap)"
    else:
        folder = Path(tempfile.mkdtemp(prefix="grader-probe-"))
        try:
            supervise.give_to(folder, user)
            command = [*bwrap_arguments(writable=[folder], workdir=folder),
                       sys.executable, "-S", "-c", "import os; open('probe', 'w').write('ok')"]
            try:
                done = subprocess.run(
                    command, stdin=subprocess.DEVNULL, capture_output=True, timeout=30,
                    preexec_fn=(lambda: supervise.drop_privileges(user)) if user else None)
                ok = done.returncode == 0 and (folder / "probe").is_file()
                error = done.stderr.decode(errors="replace").strip().splitlines()
                problem = None if ok else (
                    f"bwrap failed: {error[-1] if error else f'exit status {done.returncode}'}")
            except (OSError, subprocess.SubprocessError) as exc:
                problem = f"bwrap failed: {exc}"
        finally:
            import shutil as _shutil
            _shutil.rmtree(folder, ignore_errors=True)
    _PROBES[key] = problem
    return problem


def _description(problem: str | None, user: "supervise.Account | None") -> str:
    who = f", as user {user.name}" if user is not None else ""
    if problem is None:
        return ("bubblewrap (own filesystem view: Python environment and assets read-only, scratch "
                f"read-write; own PID namespace; no network) and resource limits{who}")
    return f"resource limits{who} only; no bubblewrap ({problem})"


def describe(limits: Limits) -> str:
    """Which confinement the learner's processes get under ``limits``, in one line for reports.

    Raises :class:`ConfinementUnavailable` when ``limits.require_confinement`` and bubblewrap
    cannot confine here, before anything is graded.
    """
    user = supervise.account(limits.run_as) if limits.run_as else None
    problem = bwrap_problem(user)
    if problem is not None and limits.require_confinement:
        raise ConfinementUnavailable(_refusal(problem))
    return _description(problem, user)


NOT_CONFINED = "not graded: bubblewrap cannot confine"
"""How the one line begins that says a learner was not graded for want of confinement."""


def _refusal(problem: str) -> str:
    return (f"{NOT_CONFINED} the learner's code here ({problem}); install "
            "bubblewrap (apt-get install bubblewrap) and let it create user namespaces, or pass "
            "--allow-unconfined to grade with resource limits only")


class ConfinementUnavailable(GraderError):
    """Confinement is required (:attr:`Limits.require_confinement`) and bubblewrap cannot confine
    the learner's processes here; the message is one line with bubblewrap's own reason."""
