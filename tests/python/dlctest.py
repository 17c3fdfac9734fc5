# SPDX-License-Identifier: MIT
"""The sub-check protocol of tests/unit/helpers/testutil.h, for Python tests.

Each sub-check prints one line, "ok NAME", "FAIL NAME" or "skip NAME: why",
and tests/run-checks.sh counts every line as PROGRAM/NAME. A sub-check is a
function run by run(); it fails by raising (check() raises AssertionError
with a message). skip() is for what a machine may truly lack; skip_required()
is for a comparison against an independent reference that `make deps`
installs (torch, torchvision, Pillow): a FAIL under CI=true.

Run the tests with Debian's /usr/bin/python3 (torch, torchvision, Pillow),
with PYTHONPATH naming the staged package ($BUILD/python) and DLCACHECTL the
CLI; tests/run-checks.sh sets both.
"""

import os
import sys
import traceback

failures = 0


class Skip(Exception):
    """Raised inside a sub-check: print a skip line with the reason."""

    def __init__(self, why, required=False):
        super().__init__(why)
        self.why = why
        self.required = required


def in_ci():
    return os.environ.get("CI") in ("true", "1")


def check(cond, msg="check failed"):
    if not cond:
        raise AssertionError(msg)


def skip(why):
    raise Skip(why)


def skip_required(why):
    raise Skip(why, required=True)


def run(name, fn, *args, **kwargs):
    """Run one sub-check and print its line. Returns fn's value or None."""
    global failures
    try:
        ret = fn(*args, **kwargs)
    except Skip as s:
        if s.required and in_ci():
            failures += 1
            print("FAIL %s: %s (a required comparison; CI=true)" % (name, s.why),
                  flush=True)
        else:
            print("skip %s: %s" % (name, s.why), flush=True)
        return None
    except Exception:
        failures += 1
        sys.stdout.flush()
        traceback.print_exc()
        sys.stderr.flush()
        print("FAIL %s" % name, flush=True)
        return None
    print("ok %s" % name, flush=True)
    return ret


def fingerprint(images, labels, ids):
    """A batch (images, labels, ids) as something == compares: the IDs,
    the labels and a SHA-1 of the pixels."""
    import hashlib
    return (tuple(ids.tolist()), tuple(labels.tolist()),
            hashlib.sha1(images.contiguous().numpy().tobytes()).hexdigest())


def dlcachectl():
    """The CLI under test: $DLCACHECTL, else build/dlcachectl."""
    ctl = os.environ.get("DLCACHECTL")
    if not ctl:
        ctl = os.path.join(os.path.dirname(__file__), "..", "..", "build",
                           "dlcachectl")
    return os.path.abspath(ctl)


def scratch(name):
    """A fresh scratch directory under $DLC_TEST_TMP or /tmp, removed at
    exit unless $DLC_TEST_KEEP is set."""
    import atexit
    import shutil
    import tempfile
    base = os.environ.get("DLC_TEST_TMP") or None
    path = tempfile.mkdtemp(prefix="dlc-%s-" % name, dir=base)
    if not os.environ.get("DLC_TEST_KEEP"):
        atexit.register(shutil.rmtree, path, True)
    return path


def gen_dataset(path, images=200, classes=4, seed=0, extra=()):
    """`dlcachectl gen` a data set at @path (idempotent); returns @path."""
    import subprocess
    subprocess.run([dlcachectl(), "gen", path, "--images", str(images),
                    "--classes", str(classes), "--seed", str(seed)]
                   + list(extra), check=True, stdout=subprocess.DEVNULL)
    return path


def done():
    """Exit 1 when any sub-check failed."""
    sys.exit(1 if failures else 0)
