# SPDX-License-Identifier: MIT
"""dlcache.torch.DataLoader across processes: fork, pickling, Ctrl-C, and
the lifetime of kept tensors across close() and garbage collection.

Whatever could hang or crash (a forked child, a SIGINT, a tensor over freed
memory) runs in a child process with a hard timeout, so a defect is a FAIL
line here and never a hung or dead test.
"""

import gc
import os
import pickle
import select
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import torch

import dlcache
from dlcache.torch import DataLoader

from dlcfork import in_fork
from dlctest import check, done, gen_dataset, run, scratch

TMP = scratch("process")
DATA = gen_dataset(os.path.join(TMP, "set"), images=48, classes=3, seed=7)
HERE = os.path.dirname(os.path.abspath(__file__))


def small_loader(**kw):
    args = dict(batch_size=8, size=32, cache=0, threads=2, drop_last=False,
                return_ids=True)
    args.update(kw)
    return DataLoader(DATA, **args)


def one_epoch_ids(dl):
    ids = []
    for _, _, i in dl:
        ids += i.tolist()
    return ids


# ---- fork --------------------------------------------------------------------

def fork_child():
    """Used in a forked child: ForkedLoaderError at once, no hang; the
    child exits; the parent's loader still delivers a whole epoch."""
    dl = small_loader()
    it = iter(dl)
    next(it)		# the loader's threads are running now

    def child():
        try:
            for _ in dl:
                pass
            check(False, "iterated without an error")
        except dlcache.ForkedLoaderError as e:
            msg = str(e)
        for fn in (len, lambda d: d.stats()):
            try:
                fn(dl)
                check(False, "%s worked in the child" % fn)
            except dlcache.ForkedLoaderError:
                pass
        dl.close()		# not the child's to free: no hang, no crash
        gc.collect()
        return "%d: %s" % (os.getpid(), msg)
    status, msg = in_fork(child, 20)
    check(status is not None, "the forked child hung (killed after 20 s)")
    check(status == 0, "child exit %r: %s" % (status, msg))
    pid = msg.split(":")[0]
    check("forked" in msg and "process %s" % pid in msg,
          "the error does not explain the fork: %s" % msg)
    # the parent goes on with the iteration it had started, then a new epoch
    rest = [i for _, _, ids in it for i in ids.tolist()]
    check(len(rest) == 40, "parent's iteration after the fork: %d samples"
          % len(rest))
    ids = one_epoch_ids(dl)
    check(sorted(ids) == list(range(48)), "parent's next epoch: %r" % ids)
    dl.close()


def fork_new_loader():
    """A loader made in a forked child (after the parent made its own)
    works there: only loaders from before the fork are foreign."""
    parent = small_loader()
    next(iter(parent))

    def child():
        dl = small_loader()
        ids = sorted(one_epoch_ids(dl))
        dl.close()
        check(ids == list(range(48)), "ids %r" % ids)
    status, msg = in_fork(child, 20)
    check(status is not None, "the forked child hung (killed after 20 s)")
    check(status == 0, "a loader made in the child: %s" % msg)
    parent.close()


def torch_wrap():
    """Wrapped in torch.utils.data.DataLoader (num_workers 0 and 1): a
    clear TypeError, not a hang; the loader works afterwards."""
    dl = small_loader()
    for workers in (0, 1):
        kw = dict(num_workers=workers, batch_size=None)
        if workers:
            kw["timeout"] = 20	# a hang becomes torch's RuntimeError
        wrapped = torch.utils.data.DataLoader(dl, **kw)
        t0 = time.monotonic()
        try:
            next(iter(wrapped))
            check(False, "num_workers=%d: a batch came out" % workers)
        except TypeError as e:
            check("torch.utils.data.DataLoader" in str(e),
                  "num_workers=%d: unclear TypeError: %s" % (workers, e))
        check(time.monotonic() - t0 < 15, "num_workers=%d took %.1f s"
              % (workers, time.monotonic() - t0))
        del wrapped
    check(sorted(one_epoch_ids(dl)) == list(range(48)),
          "the loader after the wrapping attempts")
    dl.close()


def pickling():
    dl = small_loader()
    for proto in (2, pickle.HIGHEST_PROTOCOL):
        try:
            pickle.dumps(dl, protocol=proto)
            check(False, "pickle.dumps(protocol=%d) succeeded" % proto)
        except TypeError as e:
            check("pickled" in str(e), "unclear TypeError: %s" % e)
    check(len(one_epoch_ids(dl)) == 48, "the loader after pickling")
    dl.close()


# ---- helpers in child processes ------------------------------------------

def child(code, limit, sigint_after=None):
    """Run @code in a fresh /usr/bin/python3 (stdout lines, returned), with
    a hard @limit. @sigint_after: the line after which SIGINT is sent; then
    the seconds from the signal to the line "interrupted" are returned too."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [HERE] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    prog = "import sys; sys.argv = ['child', %r]\n" % DATA + \
        textwrap.dedent(code)
    p = subprocess.Popen([sys.executable, "-c", prog], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # Raw reads of the pipe: a buffered readline() would hide lines that
    # came in one chunk from select().
    fd = p.stdout.fileno()
    lines, sent, took, buf = [], None, None, b""
    end = time.monotonic() + limit
    try:
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                raise TimeoutError
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                line = line.decode("utf-8", "replace")
                lines.append(line)
                if sigint_after is not None and line == sigint_after:
                    time.sleep(0.3)	# well inside the next batch's wait
                    sent = time.monotonic()
                    p.send_signal(signal.SIGINT)
                if line.startswith("interrupted") and sent is not None:
                    took = time.monotonic() - sent
        p.wait(max(1, end - time.monotonic()))
    except (TimeoutError, subprocess.TimeoutExpired):
        p.kill()
        p.wait()
        check(False, "child hung (killed after %d s); its lines: %r; stderr: "
              "%s" % (limit, lines, p.stderr.read()[-2000:]))
    err = p.stderr.read().decode("utf-8", "replace")
    check(p.returncode == 0, "child exit %d; lines %r; stderr: %s"
          % (p.returncode, lines, err[-3000:]))
    return lines, took


# ---- Ctrl-C --------------------------------------------------------------

# threads=1: two threads decode (the decode thread and the I/O thread),
# whatever the CPUs, so batch 1 takes about 24 large decodes' time:
# seconds, even on an idle machine without the 100 ms wait slices.
SLOW_BATCH = 48
SLOW_BATCHES = 2


def slow_set():
    """Batch 0: SLOW_BATCH small JPEGs; batch 1: SLOW_BATCH 64-megapixel
    ones (hard links of one), seconds to decode at full DCT scale with no
    cache, so the wait for batch 1 is long."""
    from PIL import Image
    root = os.path.join(TMP, "slow")
    os.makedirs(os.path.join(root, "c0"))
    g = Image.linear_gradient("L")
    for side in (64, 8000):
        gs = g.resize((side, side))
        im = Image.merge("RGB", (gs, gs.transpose(Image.FLIP_LEFT_RIGHT),
                                 gs.transpose(Image.FLIP_TOP_BOTTOM)))
        base = 0 if side == 64 else SLOW_BATCH
        first = os.path.join(root, "c0", "img_%04d.jpg" % base)
        im.save(first, quality=95)
        for i in range(base + 1, base + SLOW_BATCH):
            os.link(first, os.path.join(root, "c0", "img_%04d.jpg" % i))
    return root


CTRL_C = """
import os, time, torch
from dlcache.torch import DataLoader
B, N = %d, %d
def threads():
    return len(os.listdir("/proc/self/task"))
torch.zeros(4).add_(1)		# torch's own threads, if any, start now
before = threads()
dl = DataLoader(ROOT, batch_size=B, size=224, train=False, exact=True,
                threads=1, cache=0, drop_last=False, return_ids=True)
it = iter(dl)
t = time.monotonic()
x, y, ids = next(it)
print("batch0 %%.2f s" %% (time.monotonic() - t), flush=True)
print("waiting", flush=True)
pos = 1
try:
    for x, y, ids in it:
        pos += 1
    print("no interrupt", flush=True)
except KeyboardInterrupt:
    time.sleep(0.2)		# a thread that is still exiting shows here
    print("interrupted at=%%d threads_before=%%d threads_after=%%d"
          %% (pos, before, threads()), flush=True)
t = time.monotonic()
got = [i.tolist() for _, _, i in dl]
print("resumed %%.2f s batches %%d" %% (time.monotonic() - t, len(got)),
      flush=True)
ok = got == [list(range(k * B, k * B + B)) for k in range(pos, N)]
print("resume_ok" if ok else "resume_bad %%r" %% (got,), flush=True)
dl.close()
""" % (SLOW_BATCH, SLOW_BATCHES)


def ctrl_c():
    """SIGINT while waiting for batches: KeyboardInterrupt within 2 s, the
    loader's threads gone, and the next iteration resumes at the batch that
    was interrupted (eval order: batch k holds IDs k*B..k*B+B-1)."""
    root = slow_set()
    lines, took = child("ROOT = %r\n" % root + CTRL_C, 60,
                        sigint_after="waiting")
    print("# ctrl_c child: %s; SIGINT to KeyboardInterrupt: %s s"
          % ("; ".join(lines), took and "%.2f" % took), flush=True)
    check(any(l.startswith("batch0") for l in lines), "no first batch")
    check("no interrupt" not in lines,
          "the SIGINT did not interrupt the epoch")
    intr = [l for l in lines if l.startswith("interrupted")]
    check(intr, "no KeyboardInterrupt: %r" % lines)
    check(took is not None and took < 2.0,
          "KeyboardInterrupt came %.2f s after SIGINT (limit 2 s)" % took)
    f = dict(kv.split("=") for kv in intr[0].split()[1:])
    check(f["threads_before"] == f["threads_after"],
          "threads before the loader %s, after the interrupt %s: the "
          "loader's threads are still running" % (f["threads_before"],
                                                  f["threads_after"]))
    check("resume_ok" in lines, "resuming: %r" % lines)
    shutil.rmtree(root, ignore_errors=True)


# ---- kept tensors: close() and garbage collection ------------------------

KEEP = """
import gc, os, torch
from dlcache.torch import DataLoader
ROOT = sys.argv[1]
def make():
    return DataLoader(ROOT, batch_size=4, size=48, cache=0, threads=2,
                      drop_last=False)
def churn():
    # reuse of freed memory: another loader's ring, a whole epoch
    other = make()
    for x, y in other:
        pass
    other.close()
    junk = [torch.full((4, 3, 48, 48), 7, dtype=torch.uint8) for _ in range(64)]
    del junk
def bad(kept):
    return sum(1 for x, c in kept if not torch.equal(x, c))
def threads():
    return len(os.listdir("/proc/self/task"))
torch.zeros(4).add_(1)		# torch's own threads, if any, start now
before = threads()
"""

CLOSE = KEEP + """
dl = make()
kept = [(x, x.clone()) for x, y in dl]	# 12 batches: the ring wraps
print("kept %d, changed before close %d" % (len(kept), bad(kept)), flush=True)
dl.close()
print("threads %d after close, %d before" % (threads(), before), flush=True)
churn()
print("changed after close %d" % bad(kept), flush=True)
n = sum(x.shape[0] for x, y in dl)
print("again %d samples" % n, flush=True)
print("changed at end %d" % bad(kept), flush=True)
"""


def close_keeps():
    lines, _ = child(CLOSE, 45)
    check("kept 12, changed before close 0" in lines,
          "kept tensors were overwritten while iterating: %r" % lines)
    t = [l.split() for l in lines if l.startswith("threads")]
    check(t and t[0][1] == t[0][4], "the loader's threads outlive close(): "
          "%r" % lines)
    check("changed after close 0" in lines, "after close(): %r" % lines)
    check("again 48 samples" in lines, "iterating after close(): %r" % lines)
    check("changed at end 0" in lines, "at the end: %r" % lines)


GC = KEEP + """
def epoch():
    dl = make()
    return [(x, x.clone()) for x, y in dl]
kept = epoch()		# the loader is unreachable now
gc.collect()
churn()
gc.collect()
print("kept %d changed %d" % (len(kept), bad(kept)), flush=True)
print("threads %d after collection, %d before" % (threads(), before),
      flush=True)
"""


def gc_keeps():
    lines, _ = child(GC, 45)
    check("kept 12 changed 0" in lines, "after the loader was collected: %r"
          % lines)
    t = [l.split() for l in lines if l.startswith("threads")]
    check(t and t[0][1] == t[0][4], "the collected loader's threads still "
          "run: %r" % lines)


run("fork_child", fork_child)
run("fork_new_loader", fork_new_loader)
run("torch_wrap", torch_wrap)
run("pickling", pickling)
run("ctrl_c", ctrl_c)
run("close_keeps", close_keeps)
run("gc_keeps", gc_keeps)
done()
