#!/bin/bash
# The Python package installs the two documented ways, from a copy of the
# tracked tree (the user's tree and build directory stay untouched):
#   make install DESTDIR=... PREFIX=/usr/local  (Debian's dist-packages,
#       _libpath.py naming the installed library; $DLCACHE_LIB overrides it)
#   pip install --no-build-isolation ./python  into a fresh venv, offline,
#       with libdlcache.so.0 bundled in the package
# and in each place `import dlcache.torch` runs an epoch of a tiny data set.
set -u
cd "$(dirname "$0")/../.."
PY=/usr/bin/python3
if ! [ -x "$PY" ] || ! "$PY" -c 'import torch' 2>/dev/null; then
	echo "skip python_install: no $PY with torch (make deps installs python3-torch)"
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
src=$tmp/src
mkdir "$src"
status_before=$(git status --porcelain 2>/dev/null)
git ls-files -z 2>/dev/null | tar --null -T - -cf - 2>/dev/null | tar -xf - -C "$src" ||
	{ rm -rf "$src"; cp -a . "$src"; rm -rf "$src"/build*; }
pyver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
fails=0
ok() { echo "ok $1"; }
fail() { echo "FAIL $1${2:+: $2}"; fails=$((fails + 1)); }

# One epoch over a tiny data set: "epoch N LIBPATH" from the given python.
# Runs outside the source copy so nothing imports python/dlcache by accident;
# on failure, the last lines of its stderr follow.
epoch() {
	local py=$1
	shift
	(cd "$tmp" && env -u PYTHONPATH -u DLCACHE_LIB "$@" "$py" -c '
import sys, dlcache, dlcache._lib
from dlcache.torch import DataLoader
n = sum(x.shape[0] for x, y in DataLoader(sys.argv[1], batch_size=4, size=32,
                                            train=False, drop_last=False))
print("epoch", n, dlcache._lib.path, dlcache.__file__)
' "$tmp/data" 2>"$tmp/epoch.err" || tail -n 3 "$tmp/epoch.err")
}

# ---- make install --------------------------------------------------------
# (install builds lib and tools, not the module: no kernel build here)
if ! make -C "$src" -j2 install DESTDIR="$tmp/dest" PREFIX=/usr/local \
		PYTHON="$PY" >"$tmp/make.log" 2>&1; then
	fail make_install "exit status; last lines: $(tail -n 5 "$tmp/make.log")"
	exit 1
fi
ctl=$src/build/dlcachectl
"$ctl" gen "$tmp/data" --images 12 --classes 2 >/dev/null ||
	{ fail make_install "dlcachectl gen failed"; exit 1; }
site=$tmp/dest/usr/local/lib/python$pyver/dist-packages
lib=$tmp/dest/usr/local/lib/libdlcache.so.0
missing=
for f in __init__.py _lib.py _loader.py torch.py errors.py _libpath.py; do
	[ -f "$site/dlcache/$f" ] || missing="$missing $f"
done
[ -e "$lib" ] || missing="$missing $lib"
if [ -z "$missing" ]; then
	ok make_install/files
else
	fail make_install/files "missing under $site/dlcache:$missing"
fi
want="LIBDLCACHE = '/usr/local/lib/libdlcache.so.0'"
got=$(cat "$site/dlcache/_libpath.py" 2>/dev/null)
if [ "$got" = "$want" ]; then
	ok make_install/libpath
else
	fail make_install/libpath "_libpath.py says \"$got\", want \"$want\""
fi
out=$(epoch "$PY" PYTHONPATH="$site" DLCACHE_LIB="$lib")
if [ "$out" = "epoch 12 $lib $site/dlcache/__init__.py" ]; then
	ok make_install/import_with_DLCACHE_LIB
else
	fail make_install/import_with_DLCACHE_LIB "$(echo "$out" | tail -n 3)"
fi

# ---- pip install into a venv -------------------------------------------------
if ! "$PY" -m venv --system-site-packages "$tmp/venv" >"$tmp/venv.log" 2>&1; then
	fail pip_install/venv "$(tail -n 3 "$tmp/venv.log") (python3-venv)"
	exit 1
fi
vpy=$tmp/venv/bin/python
if (cd "$tmp" && env -u PYTHONPATH PIP_NO_INDEX=1 "$vpy" -m pip install \
		--no-index --no-build-isolation --no-cache-dir "$src/python" \
		>"$tmp/pip.log" 2>&1); then
	ok pip_install/install
else
	fail pip_install/install "$(tail -n 5 "$tmp/pip.log")"
	exit 1
fi
vsite=$("$vpy" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
bundled=$vsite/dlcache/libdlcache.so.0
if [ -f "$bundled" ] && [ ! -e "$vsite/dlcache/_libpath.py" ]; then
	ok pip_install/bundled_lib
else
	fail pip_install/bundled_lib "want $bundled and no _libpath.py; have: $(ls "$vsite/dlcache" 2>&1 | tr '\n' ' ')"
fi
out=$(epoch "$vpy")
if [ "$out" = "epoch 12 $bundled $vsite/dlcache/__init__.py" ]; then
	ok pip_install/epoch_with_bundled_lib
else
	fail pip_install/epoch_with_bundled_lib "$(echo "$out" | tail -n 3)"
fi
# a $DLCACHE_LIB that is not there: an ImportError that names it
out=$(cd "$tmp" && env -u PYTHONPATH DLCACHE_LIB="$tmp/nowhere/libdlcache.so.0" \
	"$vpy" -c 'import dlcache.torch' 2>&1)
if echo "$out" | grep -q "ImportError: .*DLCACHE_LIB.*$tmp/nowhere/libdlcache.so.0"; then
	ok pip_install/bad_DLCACHE_LIB
else
	fail pip_install/bad_DLCACHE_LIB "$(echo "$out" | tail -n 2)"
fi

if [ "$(git status --porcelain 2>/dev/null)" = "$status_before" ]; then
	ok python_install/tree_untouched
else
	fail python_install/tree_untouched "git status changed"
fi
exit $((fails > 0))
