#!/usr/bin/env bash
# What a user installs works, using the installed files alone: `cmake --install` of the build
# tree into a scratch prefix, then the installed redbloom found on PATH, its man page, the Redis
# module loaded by a redis-server from the prefix, the Python package imported by the
# interpreter (from a prefix of its own, and per user: --prefix $HOME/.local with a scratch
# HOME), and programs built against the installed library with find_package and pkg-config.
# Usage: install_test.sh BUILD_DIR CONSUMER_SRC LIBDIR MANDIR [--module] [--python PYTHON DIR]
#   LIBDIR, MANDIR: CMAKE_INSTALL_LIBDIR and CMAKE_INSTALL_MANDIR (relative to the prefix);
#   --module: redbloom.so was built; --python: the package was built for PYTHON, and DIR is
#   where it goes in a prefix other than the user's ~/.local.
set -uo pipefail
build=$(realpath "$1")
consumer_src=$(realpath "$2")
libdir=$3 mandir=$4
shift 4
module=no python="" python_dir=""
while (($# > 0)); do
  case $1 in
    --module) module=yes; shift ;;
    --python) python=$2 python_dir=$3; shift 3 ;;
    *) echo "install_test.sh: unknown argument $1"; exit 2 ;;
  esac
done
tests_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
prefix=$root/prefix
# No interpreter settings of the calling environment decide where the package goes.
unset PYTHONPATH PYTHONUSERBASE PYTHONNOUSERSITE PYTHONHOME
if ! cmake --install "$build" --prefix "$prefix" > "$root/install.log" 2>&1; then
  echo "FAIL: cmake --install $build --prefix $prefix"
  cat "$root/install.log"
  exit 1
fi

# The check helpers and a scratch working directory; the installed command, not the build's.
# shellcheck source=tests/cli_common.sh
source "$tests_dir/cli_common.sh" "$prefix/bin/redbloom"
# shellcheck source=tests/redis_shell.sh
source "$tests_dir/redis_shell.sh"
trap 'stop_all_redis; rm -rf "$root"' EXIT

# The command: on PATH from the prefix, and it works.
export PATH="$prefix/bin:$PATH"
check "redbloom on PATH is the installed one" "$prefix/bin/redbloom" "$(command -v redbloom)"
version=$(redbloom --version)
check_contains "redbloom --version" "redbloom " "$version"
printf 'a\nb\na\nc\n' > items.txt
check "installed redbloom dedups" "a b c" \
  "$(redbloom dedup -q -f seen.rbf -n 1000 -p 0.01 items.txt | xargs)"
check "installed redbloom reads its filter back" "3" \
  "$(printf 'a\nb\nc\nd\n' | redbloom exists -q -f seen.rbf -c 2>/dev/null | head -n 1)"

# No installed program or module reaches back into the build tree.
elves=("$prefix/bin/redbloom")
[[ $module == yes ]] && elves+=("$prefix/$libdir/redbloom/redbloom.so")
for elf in "${elves[@]}"; do
  check "no build-tree run path in ${elf#"$prefix"/}" "" \
    "$(readelf -d "$elf" | grep -E 'R(UN)?PATH' | grep -F "$build")"
done

# The man page: written at build time from --help, installed, rendered without warnings, and
# `man redbloom` finds it for a user whose PATH has the prefix's bin.
page="$prefix/$mandir/man1/redbloom.1"
if [[ ! -f "$page" ]]; then
  echo "FAIL: no man page at $page (the build needs help2man: scripts/install-deps.sh)"
  failures=$((failures + 1))
else
  rendered=$(groff -man -Tascii -P-cbou -ww "$page" 2> groff.err | tr -s " ")
  check "groff renders redbloom(1) without warnings" "" "$(cat groff.err)"
  check_contains "redbloom(1) names the command" "redbloom - Bloom filters" "$rendered"
  # Every command of --help, as help2man lays it out (name at the start of a line).
  commands=$(redbloom --help | sed -n '/^Subcommands:/,$s/^  \([a-z][a-z]*\) .*/\1/p')
  check_contains "--help lists dedup" "dedup" "$commands"
  for command in $commands; do
    grep -qE "^ $command( |$)" <<< "$rendered" || check "redbloom(1) lists $command" "" "missing"
  done
  check_contains "redbloom(1) carries the version" "${version#redbloom }" "$rendered"
  check_contains "redbloom(1) shows the jobs: a stage with a journal" \
    "redbloom dedup -f events.rbf --journal events.journal" "$rendered"
  check_contains "redbloom(1) shows the jobs: Redis streams" "redbloom dedup --from redis-stream://" \
    "$rendered"
  check_contains "redbloom(1) has the exit statuses" "Stopped by SIGHUP, SIGINT or SIGTERM" "$rendered"
  check "man -w finds redbloom(1) from PATH" "$page" "$(MANPATH='' man -w redbloom 2>&1)"
  check_contains "man -l renders it" "SYNOPSIS" "$(MANPAGER="cat" man -l "$page" 2>&1)"
fi

# The Redis module, loaded from the prefix as the README says, answering BF.* commands.
if [[ $module == yes ]]; then
  so="$prefix/$libdir/redbloom/redbloom.so"
  check "redbloom.so is executable" "yes" "$([[ -x "$so" ]] && echo yes || echo no)"
  start_redis mod --loadmodule "$so"
  check "BF.RESERVE" "OK" "$(rcli mod BF.RESERVE urls 0.01 1000)"
  check "BF.MADD" "1 1 0" "$(rcli mod BF.MADD urls a b a | xargs)"
  check "BF.EXISTS" "1 0" "$(rcli mod BF.MEXISTS urls b z | xargs)"
  stop_redis mod
fi

# The Python package.
if [[ -n "$python" ]]; then
  probe='import redbloom
f = redbloom.open("memory:", capacity=1000, error_rate=0.01)
assert f.add("x") and "x" in f and not f.add("x")
c = redbloom.open("memory:", capacity=1000, error_rate=0.01, kind="cuckoo")
assert c.add("x") and c.count("x") == 1 and c.info()["cuckoo"]["items"] == 1
print(redbloom.__file__)
print("redbloom " + redbloom.__version__)'
  # A prefix of its own: the interpreter's site directory layout under it, and the install
  # says to set PYTHONPATH since the interpreter does not read it.
  dir="$prefix/$python_dir"
  check_contains "install names where the package went" "set PYTHONPATH=$dir" \
    "$(cat "$root/install.log")"
  out=$(PYTHONPATH="$dir" "$python" -c "$probe" 2>&1)
  check "the prefix's package imports" "$dir/redbloom/__init__.py
$version" "$out"

  # /usr/local, staged with DESTDIR as a packager would: the directory the interpreter reads.
  staged=$(DESTDIR=$root/staged cmake --install "$build" --prefix /usr/local 2>&1)
  check "staged /usr/local install" 0 "$?"
  check_contains "/usr/local: the interpreter reads the package's directory" \
    "/usr/local/$python_dir, where $python finds it" "$staged"
  check "/usr/local: the package is staged there" "yes" \
    "$([[ -f "$root/staged/usr/local/$python_dir/redbloom/__init__.py" ]] && echo yes || echo no)"

  # Per user, as the README says: cmake --install --prefix ~/.local, then the interpreter
  # imports it from the user site-packages with no PYTHONPATH.
  home=$work/home
  mkdir -p "$home"
  user_install=$(HOME=$home cmake --install "$build" --prefix "$home/.local" 2>&1)
  check "per-user install" 0 "$?"
  user_site=$(HOME=$home "$python" -c 'import site; print(site.getusersitepackages())')
  check_contains "per-user site-packages" "$home/.local/lib/" "$user_site"
  check_contains "per-user install names it" "$user_site, where $python finds it" "$user_install"
  out=$(HOME=$home "$python" -c "$probe" 2>&1)
  check "the per-user package imports" "$user_site/redbloom/__init__.py
$version" "$out"
  check "per-user redbloom on PATH" "$home/.local/bin/redbloom" \
    "$(PATH="$home/.local/bin:/usr/bin:/bin" command -v redbloom)"
  # find_package finds the per-user install from PATH alone (a bin on PATH names its prefix).
  HOME=$home PATH="$home/.local/bin:/usr/bin:/bin" cmake -S "$consumer_src" -B user-consumer \
    > user-consumer.log 2>&1
  check "find_package(redbloom) from ~/.local/bin on PATH" "$home/.local/lib/cmake/redbloom" \
    "$(sed -n 's/^redbloom_DIR:PATH=//p' user-consumer/CMakeCache.txt 2>/dev/null)"
fi

# Programs built against the installed library: find_package(redbloom) and pkg-config.
consumer_out=$(bash "$tests_dir/consumer/run.sh" "$build" "$consumer_src" "$prefix" 2>&1)
consumer_rc=$?
check "consumers built against the installed library" 0 "$consumer_rc"
[[ $consumer_rc -eq 0 ]] || echo "$consumer_out"

echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
