# SPDX-License-Identifier: MIT
"""Build hook: bundle libdlcache.so with the package.

`pip install ./python` (in a venv: --no-build-isolation) builds the library
with the repository's Makefile when it is not built yet, and copies it into
the package as dlcache/libdlcache.so.0, which dlcache/_lib.py loads first
after $DLCACHE_LIB. Outside a checkout (no Makefile above), the package
uses the libdlcache.so.0 the dynamic loader finds (`make install`).
"""

import glob
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


class BuildWithLib(build_py):
    def run(self):
        super().run()
        build = os.environ.get("BUILD", "build")
        if not os.path.exists(os.path.join(REPO, "Makefile")):
            return
        subprocess.check_call(["make", "-C", REPO, "BUILD=" + build, "lib"])
        libs = sorted(glob.glob(os.path.join(REPO, build,
                                             "libdlcache.so.*.*.*")))
        if not libs:
            raise RuntimeError("libdlcache.so was not built in %s"
                               % os.path.join(REPO, build))
        dst = os.path.join(self.build_lib, "dlcache", "libdlcache.so.0")
        shutil.copy2(libs[-1], dst)
        # The in-tree path recorded by `make python` does not travel.
        stale = os.path.join(self.build_lib, "dlcache", "_libpath.py")
        if os.path.exists(stale):
            os.unlink(stale)


setup(cmdclass={"build_py": BuildWithLib},
      package_data={"dlcache": ["libdlcache.so.0"]})
