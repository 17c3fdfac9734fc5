# SPDX-License-Identifier: MIT
"""Run a function in a forked child with a hard time limit (Python tests).

in_fork(fn, limit) forks; the child runs fn() and exits 0 with fn's
return value (a str) as its message, or exits 1 with the traceback; a
child still running after @limit seconds is killed. Returns (status,
message), status None for a child that had to be killed. The child leaves
with os._exit, so the parent's atexit handlers and buffers stay the
parent's.
"""

import os
import signal
import time
import traceback


def in_fork(fn, limit):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        code, msg = 1, ""
        try:
            msg = fn() or ""
            code = 0
        except BaseException:
            msg = traceback.format_exc()
        finally:
            os.write(w, msg.encode("utf-8", "replace")[-8000:])
            os._exit(code)
    os.close(w)
    status = None
    end = time.monotonic() + limit
    while time.monotonic() < end:
        got, st = os.waitpid(pid, os.WNOHANG)
        if got == pid:
            status = os.waitstatus_to_exitcode(st)
            break
        time.sleep(0.02)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    msg = os.read(r, 8192).decode("utf-8", "replace")
    os.close(r)
    return status, msg
