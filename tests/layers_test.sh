#!/usr/bin/env bash
# The layers the build enforces: a target built with what the command (or the Python package)
# compiles and links with can include the public headers, and cannot include src/'s.
# Usage: layers_test.sh CMAKE BUILD_DIR CONSUMER (cli or python)
set -u
cmake=$1 build=$2 consumer=$3
fail=0

out=$("$cmake" --build "$build" --target "layers_${consumer}_public_probe" 2>&1)
if [[ $? -ne 0 ]]; then
  echo "FAIL: a public header does not compile with the $consumer's flags:"
  echo "$out"
  fail=1
else
  echo "ok: the $consumer includes redbloom/redbloom.hpp"
fi

out=$("$cmake" --build "$build" --target "layers_${consumer}_internal_probe" 2>&1)
rc=$?
if [[ $rc -eq 0 ]]; then
  echo "FAIL: the $consumer's flags let it include redis/redis_store.hpp from src/"
  fail=1
elif ! grep -q 'redis/redis_store.hpp: No such file or directory' <<<"$out"; then
  echo "FAIL: the internal include failed for another reason than a missing header:"
  echo "$out"
  fail=1
else
  echo "ok: the $consumer cannot include redis/redis_store.hpp"
fi
exit $fail
