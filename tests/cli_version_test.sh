#!/usr/bin/env bash
# The version has one source, CMake's PROJECT_VERSION: `redbloom --version` prints it and
# Python's redbloom.__version__ (when the Python package is built) carries the same.
# Usage: cli_version_test.sh PATH/TO/redbloom PROJECT_VERSION [PATH/TO/_version.py]
source "$(dirname "$0")/cli_common.sh"
project_version=$2
python_version_file=${3:-}

run --version
check "--version: exit 0" 0 "$rc"
check "--version: the project's version" "redbloom $project_version" "$out"

if [[ -n "$python_version_file" ]]; then  # given only when the Python package is built
  check "Python's __version__: the project's version" "__version__ = \"$project_version\"" \
    "$(grep '^__version__' "$python_version_file")"
fi

echo "cli_version_test: $passes passed, $failures failed"
((failures == 0))
