# SPDX-License-Identifier: MIT
"""The ctypes structs of dlcache._lib against the C compiler: every field's
offset and every struct's size, from a program built on dlcache.h."""

import ctypes
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dlctest  # noqa: E402
from dlctest import check  # noqa: E402

from dlcache import _lib  # noqa: E402

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
STRUCTS = {"dlc_transform": _lib.Transform, "dlc_config": _lib.Config,
           "dlc_batch": _lib.Batch, "dlc_stats": _lib.Stats,
           "dlc_error_info": _lib.ErrorInfo}


def c_layout(tmp):
    lines = ["#include <stdio.h>", "#include <stddef.h>",
             '#include "dlcache.h"', "int main(void) {"]
    for cname, py in STRUCTS.items():
        lines.append('printf("%s sizeof() %%zu\\n", sizeof(struct %s));'
                     % (cname, cname))
        for f in py._fields_:
            lines.append('printf("%s %s %%zu\\n", offsetof(struct %s, %s));'
                         % (cname, f[0], cname, f[0]))
    lines += ["return 0; }"]
    src = os.path.join(tmp, "layout.c")
    exe = os.path.join(tmp, "layout")
    with open(src, "w") as f:
        f.write("\n".join(lines) + "\n")
    subprocess.run(["cc", "-I", os.path.join(REPO, "libdlcache", "include"),
                    "-o", exe, src], check=True)
    out = subprocess.run([exe], check=True, stdout=subprocess.PIPE,
                         text=True).stdout
    return {tuple(l.split()[:2]): int(l.split()[2]) for l in out.splitlines()}


def same_layout(c, cname, py):
    check(c[(cname, "sizeof()")] == ctypes.sizeof(py), "sizeof(struct %s) is %d, "
          "ctypes says %d" % (cname, c[(cname, "sizeof()")], ctypes.sizeof(py)))
    for f in py._fields_:
        off = getattr(py, f[0]).offset
        check(c[(cname, f[0])] == off, "%s.%s at %d, ctypes at %d"
              % (cname, f[0], c[(cname, f[0])], off))


def constants():
    check(_lib.Config.shard_drop_last.offset == _lib.CONFIG_SIZE_VER0,
          "DLC_CONFIG_SIZE_VER0")
    n = len([k for k in range(32)
             if _lib.lib.dlc_error_kind_name(k) != b"unknown"])
    check(n == _lib.ERR_KINDS, "the library names %d error kinds, the binding "
          "knows %d" % (n, _lib.ERR_KINDS))


def main():
    tmp = dlctest.scratch("abi")
    c = dlctest.run("compile_layout_program", c_layout, tmp)
    if c is not None:
        for cname, py in STRUCTS.items():
            dlctest.run("layout_" + cname, same_layout, c, cname, py)
    dlctest.run("constants", constants)
    dlctest.done()


if __name__ == "__main__":
    main()
