"""A pytest plugin loaded next to nbval: judge each cell by the kernel's execute_reply status.

nbval fails a cell when the kernel publishes an ``error`` message. A notebook can silence those
(``get_ipython().set_custom_exc``) while the reply still says ``"status": "error"``; this plugin
records every reply and fails such a cell too.
"""
from __future__ import annotations

import pytest
from nbval import kernel as nbval_kernel
from nbval.plugin import IPyNbCell, NbCellError

_replies: dict[str, dict] = {}


def _await_reply(self, msg_id, timeout=None):
    while True:
        msg = self.get_message(stream="shell", timeout=timeout)
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


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    result = yield
    if isinstance(item, IPyNbCell) and not item.options.get("check_exception"):
        reply = _replies.pop(getattr(item.parent.kernel, "last_msg_id", None), None)
        if reply is not None and reply.get("status") == "error":
            raise NbCellError(item.cell_num, "the kernel replied 'error' although no error "
                              "was shown (is the notebook hiding its exceptions?)",
                              item.cell.source, f"{reply.get('ename')}: {reply.get('evalue')}")
    return result
