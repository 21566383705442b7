"""A pytest plugin loaded next to nbval: stricter judging, and a bounded time for the whole run.

- nbval fails a cell when the kernel publishes an ``error`` message. A notebook can silence those
  (``get_ipython().set_custom_exc``) while the reply still says ``"status": "error"``; this plugin
  records every reply and fails such a cell too.
- ``--grader-budget SECONDS`` bounds the whole run: each cell's time-out is cut to what is left of
  the budget, and a cell started with nothing left is not run.
- Execution stops at the first cell that times out or whose kernel died: every later cell would
  only wait out its own time-out. The reason goes to the file named by ``--grader-stop-file``.
  A kernel that died is noticed within :data:`POLL_SECONDS`, not at the cell's time-out; the
  kernel of a cell that timed out is stopped at once, not interrupted (:func:`_interrupt`).
- The kernel imports torch as it starts (:data:`IMPORT_TORCH`), and each cell's JUnit record
  holds the CPU seconds its kernel spent (:data:`CPU_PROPERTY`), which
  ``scripts/record_solution_seconds.py`` records for the grader's time-outs.
- ``--grader-kernel FILE`` (JSON: ``{"prefix": [...], "ipc": FOLDER}``) starts the kernel under
  the command ``prefix`` (bubblewrap, from :mod:`grader.notebook.execute`) and talks to it over ZeroMQ's
  ``ipc`` transport: Unix sockets in ``FOLDER``, which the kernel's view holds, since a kernel
  without network cannot reach a TCP port of ours.
"""
from __future__ import annotations

import json
import time
from collections import deque
from pathlib import Path
from queue import Empty

import psutil
import pytest
import zmq

from grader.notebook._imports import skip_slow_optional_imports
from grader.sandbox.supervise import TRIM_SECONDS

skip_slow_optional_imports()

from nbval import kernel as nbval_kernel  # noqa: E402 - after the line above
from nbval.plugin import IPyNbCell, NbCellError  # noqa: E402

from grader.notebook.read import code_cell_labels  # noqa: E402 - how every report names a cell

_replies: dict[str, dict] = {}
_clock = {"start": time.monotonic()}


POLL_SECONDS = 0.25
"""How often the wait for a cell's reply looks whether the kernel is still alive."""


class KernelDiedError(RuntimeError):
    """The kernel's process ended while a cell ran (``os._exit``, a signal, the memory limit)."""


def _await_reply(self, msg_id, timeout=None):
    """nbval's wait for a cell's reply, which also records the reply (for the check of hidden
    errors below) and ends as soon as the kernel's process is gone: a kernel that died (an
    ``os._exit`` in the learner's code) would otherwise be waited for until the cell's time-out.
    Meanwhile it reads what the kernel publishes as it comes (:func:`_read_output`): a cell's
    output is cut at :data:`OUTPUT_BYTES_PER_CELL` as it arrives instead of piling up in this
    process until nbval reads it after the reply."""
    deadline = None if timeout is None else time.monotonic() + timeout
    shell = self.kc.shell_channel.socket
    poller = zmq.Poller()
    for socket in (shell, self.kc.iopub_channel.socket):
        poller.register(socket, zmq.POLLIN)
    while True:
        _read_output(self)
        wait = POLL_SECONDS if deadline is None else min(POLL_SECONDS, deadline - time.monotonic())
        try:
            # Wakes for the reply or for output, whichever comes first.
            if shell not in dict(poller.poll(max(wait, 0) * 1000)):
                raise Empty
            msg = self.get_message(stream="shell", timeout=0)
        except Empty:
            if not self.is_alive():
                raise KernelDiedError("the kernel died while running this cell (os._exit, a signal, "
                                 "or the memory limit?)") from None
            if deadline is not None and time.monotonic() >= deadline:
                raise
            continue
        if msg["parent_header"].get("msg_id") == msg_id:
            if msg["content"]["status"] == "aborted":
                raise RuntimeError("Kernel aborted execution request")
            _replies[msg_id] = msg["content"]
            return


nbval_kernel.RunningKernel.await_reply = _await_reply
_original_execute = nbval_kernel.RunningKernel.execute_cell_input


def _execute_cell_input(self, cell_input, allow_stdin=None):
    msg_id = _original_execute(self, cell_input, allow_stdin=allow_stdin)
    self.last_msg_id = msg_id
    return msg_id


nbval_kernel.RunningKernel.execute_cell_input = _execute_cell_input
_original_get_message = nbval_kernel.RunningKernel.get_message


def _interrupt(self):
    """At a cell's time-out nbval interrupts the kernel and reads the cell's output until the
    kernel is idle, for a traceback. None of that is reported (the cell failed for its time-out),
    and it can take long: a cell that printed without end has a backlog of output to read, one
    that ignores SIGINT never gets idle (nbval then waits 5 s more). So the kernel is not
    interrupted: nbval's next read of output finds nothing, and nbval stops the kernel at once."""
    self.timed_out = True


OUTPUT_BYTES_PER_CELL = 8 << 20
"""What nbval keeps of one cell's printed output (stdout and stderr together, 8 MiB); the rest is
dropped as it arrives, with one line that says so (:func:`_kept`)."""


def _held(self) -> deque:
    """The iopub messages read ahead of nbval (:func:`_read_output`), in order."""
    return self.__dict__.setdefault("_held", deque())


def _kept(self, msg):
    """``msg`` as nbval is to see it, or None: a stream message beyond the first
    :data:`OUTPUT_BYTES_PER_CELL` of its cell's output is dropped (the one that crosses the limit
    is cut, and says so). A cell that prints without end publishes faster than nbval reads until
    its time-out: one took nbval's process to 709 MiB in 5 s."""
    if msg["msg_type"] != "stream":
        return msg
    printed = self.__dict__.setdefault("_printed", {})
    parent = msg["parent_header"].get("msg_id")
    before = printed.get(parent, 0)
    text = msg["content"].get("text", "")
    printed[parent] = before + len(text)
    if before >= OUTPUT_BYTES_PER_CELL:
        return None
    if before + len(text) > OUTPUT_BYTES_PER_CELL:
        msg["content"]["text"] = (text[:OUTPUT_BYTES_PER_CELL - before] + "\n[grader: this cell "
                                  f"printed more than {OUTPUT_BYTES_PER_CELL >> 20} MiB; the rest "
                                  "is not kept]\n")
    return msg


def _read_output(self):
    """Read what the kernel has published so far (its iopub messages), to keep for nbval in their
    order (:func:`_get_message` hands them out first), less what :func:`_kept` drops."""
    held = _held(self)
    while True:
        try:
            msg = self.kc.get_iopub_msg(timeout=0)
        except Empty:
            return
        msg = _kept(self, msg)
        if msg is not None:
            held.append(msg)


def _get_message(self, stream, timeout=None):
    if getattr(self, "timed_out", False):
        raise Empty  # nbval then stops the kernel and reports the time-out
    if stream != "iopub":
        return _original_get_message(self, stream, timeout=timeout)
    held = _held(self)
    while True:
        if held:
            return held.popleft()
        # Read from the client itself, as _read_output does: nbval's get_message formats every
        # message for its debug log (pformat), even with the log off.
        msg = _kept(self, self.kc.get_iopub_msg(timeout=timeout))  # Empty at the time-out
        if msg is not None:
            return msg
        if getattr(self, "timed_out", False):
            raise Empty


nbval_kernel.RunningKernel.interrupt = _interrupt
nbval_kernel.RunningKernel.get_message = _get_message


GIVE_BACK_FREED_MEMORY = (
    "import ctypes as _c, threading as _t, time as _s\n"
    "def _give_back(trim=getattr(_c.CDLL(None), 'malloc_trim', None), sleep=_s.sleep):\n"
    "    while trim is not None:\n"
    f"        sleep({TRIM_SECONDS})\n"
    "        trim(0)\n"
    "_t.Thread(target=_give_back, name='grader-malloc-trim', daemon=True).start()\n"
    "del _c, _t, _s, _give_back\n")
"""Run by the kernel at start-up (IPython's ``exec_lines``, no name left behind): the kernel's
:func:`grader.sandbox.supervise.give_back_freed_memory`, as source because the confined kernel
cannot import that module. A thread calls glibc's ``malloc_trim(0)`` every
:data:`~grader.sandbox.supervise.TRIM_SECONDS`, returning the free pages of every malloc arena
to the system (nothing where the C library has no ``malloc_trim``). Between two trims freed
memory is reused as usual, so a loop of same-sized tensors costs no extra page faults."""


IMPORT_TORCH = (
    "try:\n"
    "    __import__('torch')\n"
    "except ImportError:\n"
    "    pass\n")
"""Run by the kernel at start-up, before it answers nbval (no name left behind: the notebook's
first cell still imports torch, now at once). Importing torch is a notebook's slowest step (2 to
4 s on a busy 2-core machine); in the kernel's start it counts towards nbval's start-up time-out,
not towards the first cell's, so that a cell's time-out can follow what the course's cells take
(:func:`grader.notebook.execute.default_cell_timeout`)."""


class _LeanSpecs(nbval_kernel.NbvalKernelspecManager):
    """nbval's kernel specs, with :data:`GIVE_BACK_FREED_MEMORY` and :data:`IMPORT_TORCH` on the
    kernel's command line."""

    def get_kernel_spec(self, kernel_name):
        spec = super().get_kernel_spec(kernel_name)
        spec.argv = [*spec.argv,
                     f"--IPKernelApp.exec_lines={GIVE_BACK_FREED_MEMORY}{IMPORT_TORCH}"]
        return spec


nbval_kernel.NbvalKernelspecManager = _LeanSpecs  # nbval's start_new_kernel looks it up here


def _confined_kernels(prefix: list[str], ipc: str) -> None:
    """Make nbval start its kernels under ``prefix``, connected through Unix sockets in ``ipc``."""
    from jupyter_client.manager import KernelManager

    class Specs(_LeanSpecs):
        def get_kernel_spec(self, kernel_name):
            spec = super().get_kernel_spec(kernel_name)
            spec.argv = [*prefix, *spec.argv]
            # A signal to bwrap does not reach the kernel inside: interrupt by a message.
            spec.interrupt_mode = "message"
            return spec

    def start_new_kernel(startup_timeout=60, kernel_name="python", **kwargs):
        # nbval's start_new_kernel, with the kernel's command and transport ours.
        km = KernelManager(kernel_name=kernel_name, kernel_spec_manager=Specs(), transport="ipc",
                           ip=str(Path(ipc) / "kernel"),
                           connection_file=str(Path(ipc) / "kernel.json"))
        km.start_kernel(**kwargs)
        kc = km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=startup_timeout)
        except RuntimeError:
            kc.stop_channels()
            km.shutdown_kernel()
            raise
        return km, kc

    nbval_kernel.start_new_kernel = start_new_kernel


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("grader")
    group.addoption("--grader-kernel", default="",
                    help="JSON file: the command prefix and the ipc folder of a confined kernel")
    group.addoption("--grader-budget", type=float, default=0.0,
                    help="seconds for the whole notebook (0: no budget)")
    group.addoption("--grader-stop-file", default="",
                    help="file that receives the reason execution stopped early")


def pytest_configure(config: pytest.Config) -> None:
    if config.option.grader_kernel:
        kernel = json.loads(Path(config.option.grader_kernel).read_text())
        _confined_kernels(kernel["prefix"], kernel["ipc"])


def pytest_sessionstart(session: pytest.Session) -> None:
    _clock["start"] = time.monotonic()
    _clock["cell_timeout"] = float(session.config.option.nbval_cell_timeout)


def _label(item: IPyNbCell) -> str:
    """The cell as every report names it (``Cell N/M``, :func:`grader.notebook.read.cell_label`);
    nbval's ``cell_num`` counts code cells only."""
    try:
        return code_cell_labels(item.parent.nb)[item.cell_num]
    except (AttributeError, IndexError):
        return f"code cell {item.cell_num + 1}"


def _stop(item: pytest.Item, reason: str) -> None:
    item.session.shouldstop = reason
    stop_file = item.config.option.grader_stop_file
    if stop_file and not Path(stop_file).exists():
        Path(stop_file).write_text(reason)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if isinstance(item, IPyNbCell) and item.cell.execution_count is None and not item.options["check"]:
        # A cell never run in this copy whose stored outputs nothing compares (lax mode): the given
        # figures and tables of a released notebook, kept without execution counts. nbval would fail
        # it ("Unrun reference cell has outputs") after running it cleanly; its outputs are only a
        # reference, and the run replaces them.
        item.cell.outputs = []
    budget = item.config.option.grader_budget
    if not isinstance(item, IPyNbCell) or not budget:
        return
    left = budget - (time.monotonic() - _clock["start"])
    if left <= 1:
        _stop(item, f"the notebook's execution budget of {budget:g} s was spent before "
                    f"{_label(item)}")
        pytest.skip("not run: the execution budget was spent")
    item.config.option.nbval_cell_timeout = min(_clock["cell_timeout"], left)


def _kernel_alive(item: IPyNbCell) -> bool:
    kernel = getattr(item.parent, "kernel", None)
    return kernel is not None and kernel.is_alive()


CPU_PROPERTY = "cpu_seconds"
"""The JUnit property that holds the CPU seconds the kernel's processes spent in a cell."""


def _kernel_cpu_seconds(item: pytest.Item) -> float | None:
    """CPU seconds (user and system) spent so far by the kernel's process and those below it
    (bubblewrap's included); None where they cannot be read (not Linux)."""
    try:
        root = psutil.Process(item.parent.kernel.km.provisioner.process.pid)
        total = 0.0
        for process in [root, *root.children(recursive=True)]:
            times = process.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
    except (AttributeError, psutil.Error):
        return None
    return total


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    before = _kernel_cpu_seconds(item) if isinstance(item, IPyNbCell) else None
    try:
        result = yield
    except KernelDiedError as exc:
        raise NbCellError(item.cell_num, f"KernelDiedError: {exc}", item.cell.source) from None
    except NbCellError:
        if isinstance(item, IPyNbCell) and getattr(item.parent, "timed_out", False):
            # nbval's own words assume it interrupted the kernel (see _interrupt): say what happened.
            raise NbCellError(item.cell_num, "Timeout: the cell did not finish within "
                              f"{item.config.option.nbval_cell_timeout:g} s; the kernel was stopped",
                              item.cell.source) from None
        raise
    finally:
        after = _kernel_cpu_seconds(item) if before is not None else None
        if after is not None:
            # The cell's work, whatever the machine's load (which its wall time includes):
            # scripts/record_solution_seconds.py records the solutions' from here.
            item.user_properties.append((CPU_PROPERTY, round(after - before, 3)))
        if isinstance(item, IPyNbCell):
            if getattr(item.parent, "timed_out", False):
                _stop(item, f"{_label(item)} did not finish within "
                            f"{item.config.option.nbval_cell_timeout:g} s")
            elif not _kernel_alive(item):
                _stop(item, f"the kernel died while running {_label(item)}")
    if isinstance(item, IPyNbCell) and not item.options.get("check_exception"):
        reply = _replies.pop(getattr(item.parent.kernel, "last_msg_id", None), None)
        if reply is not None and reply.get("status") == "error":
            raise NbCellError(item.cell_num, "the kernel replied 'error' although no error "
                              "was shown (is the notebook hiding its exceptions?)",
                              item.cell.source, f"{reply.get('ename')}: {reply.get('evalue')}")
    return result
