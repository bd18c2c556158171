"""Rules of the source tree that the compiler cannot check.

- No production function of 80 lines or more without a "// long:" reason in its first lines:
  a long function is usually several jobs, and the reason says why this one is not.
- The module compiles no file of src/redis and includes none of its headers: it is a shell over
  the core, with no hiredis and no client-side Redis code.
- src/local and src/redis do not reach up into src/filter (the filter layer sits on them).
- No dynamic_cast to a store or a backend: code that needs more than an interface offers asks
  for it through a narrow accessor, so that a new kind cannot be forgotten by a cast.
- The grammar of locations (a filter's '#NAME', redis-stream://, kafka://) lives in the
  library's location parser (location.hpp): the command line asks it, and parses none itself.
- Store is one bitmap and every implementation does all it promises: none of their bitmap
  methods (params, count_set_bits, read_bytes, write_bytes) throws InvalidArgument, the error
  of a method that refuses its kind of filter.

Usage: source_rules_test.py SOURCE_DIR   (needs universal-ctags)
"""

import json
import pathlib
import re
import shutil
import subprocess
import sys

LONG_LINES = 80
PRODUCTION = ["src", "cli", "module", "python/src", "include"]


def sources(root, folders):
    for folder in folders:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix in (".cpp", ".hpp", ".h") and path.is_file():
                yield path


def function_tags(root, folders):
    """ctags' function definitions in the folders' C++ files, with their end line and scope."""
    files = [str(p.relative_to(root)) for p in sources(root, folders)]
    out = subprocess.run(
        ["ctags", "--output-format=json", "--fields=+neZ", "--kinds-C++=f", "-f", "-"] + files,
        cwd=root, capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        try:
            tag = json.loads(line)
        except ValueError:
            continue
        if tag.get("kind") == "function":
            yield tag


def long_functions(root):
    found = []
    for tag in function_tags(root, PRODUCTION):
        if "end" not in tag:
            continue
        length = tag["end"] - tag["line"] + 1
        if length < LONG_LINES:
            continue
        text = (root / tag["path"]).read_text(errors="replace").splitlines()
        head = text[tag["line"] - 1:tag["line"] + 2]
        if not any("// long:" in h for h in head):
            found.append(f"{tag['path']}:{tag['line']} {tag['name']} ({length} lines)")
    return found


BITMAP_METHODS = {"params", "count_set_bits", "read_bytes", "write_bytes"}


def refusing_store_methods(root):
    """Bitmap methods of Store implementations whose own body throws InvalidArgument."""
    derived = {"Store"}
    headers = list(sources(root, ["src", "include"]))
    pattern = re.compile(r"class\s+(\w+)\s+(?:final\s+)?:\s*public\s+(?:redbloom::)?(\w+)")
    for _ in range(4):  # a few levels of inheritance
        for path in headers:
            for name, base in pattern.findall(path.read_text(errors="replace")):
                if base in derived:
                    derived.add(name)
    found = []
    for tag in function_tags(root, ["src"]):
        owner = tag.get("scope", "").split("::")[-1]
        if tag.get("name") not in BITMAP_METHODS or owner not in derived or "end" not in tag:
            continue
        text = (root / tag["path"]).read_text(errors="replace").splitlines()
        body = "\n".join(text[tag["line"] - 1:tag["end"]])
        if "throw InvalidArgument" in body or re.search(r"\brefuse\w*\(", body):
            found.append(f"{tag['path']}:{tag['line']} {owner}::{tag['name']}")
    return found


def grep(root, folders, pattern):
    regex = re.compile(pattern)
    hits = []
    for path in sources(root, folders):
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if regex.search(line):
                hits.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    return hits


def main():
    root = pathlib.Path(sys.argv[1]).resolve()
    if shutil.which("ctags") is None:
        print("FAIL: ctags is missing: apt-get install universal-ctags (scripts/install-deps.sh --test)")
        return 1
    failures = 0

    def check(problems, what):
        nonlocal failures
        if problems:
            failures += 1
            print(f"FAIL: {what}:")
            for p in problems:
                print("  " + p)
        else:
            print(f"ok: no {what}")

    check(long_functions(root),
          f"production functions of {LONG_LINES}+ lines without a '// long:' reason")
    module_cmake = (root / "module/CMakeLists.txt").read_text()
    check([l.strip() for l in module_cmake.splitlines() if "src/redis/" in l] +
          grep(root, ["module"], r'#include\s+"redis/'),
          "module file that compiles or includes src/redis")
    check(grep(root, ["src/local", "src/redis"], r'#include\s+"(filter/|redbloom/filter\.hpp)'),
          "include of the filter layer from src/local or src/redis")
    check(grep(root, PRODUCTION, r"dynamic_cast<[^>]*(Store|Backend)\b"),
          "dynamic_cast to a store or a backend")
    check(refusing_store_methods(root), "Store bitmap method that refuses (throws InvalidArgument)")
    # A --redis-file's comments ('#' to the end of a line) are the file's syntax, not a location's.
    check([h for h in grep(root, ["cli"], r"""find\('#'\)|"-stream|"kafka://"[);]|starts_with\("(redis|rediss|kafka)""")
           if "line.find('#')" not in h],
          "location grammar parsed in the command line (Location / StagePlace do it)")
    print(f"{6 - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
