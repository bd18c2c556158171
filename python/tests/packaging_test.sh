#!/usr/bin/env bash
# The two ways users install the Python package, offline: `cmake --install` into a prefix
# (where /usr/local lands on Debian's python3 path), and `pip install --no-build-isolation
# --no-index .` into a venv made with --system-site-packages.
# Usage: packaging_test.sh PYTHON BUILD_DIR SOURCE_DIR INSTALL_DIR(relative to the prefix)
set -euo pipefail
python=$1 build=$2 source=$3 install_dir=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
check='import redbloom, sys
f = redbloom.open("memory:", capacity=1000)
assert f.add("x") and "x" in f and not f.add("x")
print(redbloom.__file__)'

# cmake --install: the prefix's package directory is the one the interpreter reads for
# /usr/local, and the installed package imports from there.
on_path=$("$python" -c "import sys; print('/usr/local/$install_dir' in sys.path)")
if [[ "$on_path" != "True" ]]; then
  echo "FAIL: /usr/local/$install_dir is not on $python's sys.path"
  exit 1
fi
cmake --install "$build" --prefix "$work/prefix" >/dev/null
where=$(cd "$work" && PYTHONPATH="$work/prefix/$install_dir" "$python" -c "$check")
[[ "$where" == "$work/prefix/$install_dir/redbloom/__init__.py" ]] ||
  { echo "FAIL: imported $where, not the installed package"; exit 1; }

# pip, offline, into a venv that sees Debian's packages.
"$python" -m venv --system-site-packages "$work/venv"
# pip builds in the tree it is given: a copy, without the checkout's build directories.
mkdir "$work/src"
tar -C "$source" --exclude='./build*' --exclude=./.git -cf - . | tar -C "$work/src" -xf -
"$work/venv/bin/pip" install -q --no-build-isolation --no-index "$work/src" ||
  { echo "FAIL: pip install"; exit 1; }
where=$(cd "$work" && "$work/venv/bin/python" -c "$check")
[[ "$where" == "$work/venv/"*"/redbloom/__init__.py" ]] ||
  { echo "FAIL: the venv imported $where"; exit 1; }
echo "PASS: cmake --install and pip install"
