#!/usr/bin/env python3
"""Every relative link in README.md and docs/ resolves: the file or directory exists, and a
#anchor names a heading of the target as GitHub slugs it (or an explicit <a name/id>).
With --files: docs/design.md's Layers section names every source file (by its name or its name
without .cpp/.hpp), docs/library.md every installed header, and no installed header's text
names an internal file (a reader of the API has only the headers and the docs).
Usage: docs_links_test.py [--files] SOURCE_DIR"""
import os
import re
import sys
import unicodedata

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"", re.IGNORECASE)
INLINE_CODE = re.compile(r"`+[^`]*`+")


def markdown_lines(text):
    """The lines outside fenced code blocks, with their numbers."""
    in_fence = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence:
            yield number, line


def heading_text(raw):
    """The heading as rendered: links become their text, code and emphasis lose their marks."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", raw)
    text = re.sub(r"<[^>]+>", "", text)
    return text.replace("`", "").replace("*", "").replace("~~", "")


def github_slug(text):
    """GitHub's heading id: lower case, punctuation dropped (letters, digits, marks, '-', '_'
    and spaces stay), each space a hyphen."""
    kept = []
    for char in text.strip().lower():
        category = unicodedata.category(char)
        if char in "-_" or category[0] in "LNM":
            kept.append(char)
        elif char == " ":
            kept.append("-")
    return "".join(kept)


def anchors_of(path, cache={}):
    if path not in cache:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        anchors, seen = set(), {}
        for _, line in markdown_lines(text):
            anchors.update(HTML_ANCHOR.findall(line))
            match = HEADING.match(line)
            if not match:
                continue
            slug = github_slug(heading_text(match.group(2)))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            anchors.add(slug if count == 0 else f"{slug}-{count}")
        cache[path] = anchors
    return cache[path]


def link_targets(text):
    for number, line in markdown_lines(text):
        plain = INLINE_CODE.sub("", line)
        for target in INLINE_LINK.findall(plain):
            yield number, target
        match = REFERENCE_DEF.match(plain)
        if match:
            yield number, match.group(1)


def check(source_dir):
    documents = [os.path.join(source_dir, "README.md")]
    for root, _, files in os.walk(os.path.join(source_dir, "docs")):
        documents += [os.path.join(root, name) for name in sorted(files) if name.endswith(".md")]
    failures, links = [], 0
    for document in documents:
        with open(document, encoding="utf-8") as f:
            text = f.read()
        shown = os.path.relpath(document, source_dir)
        for number, target in link_targets(text):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
                continue  # http:, https:, mailto: and the like: not this repository's files
            links += 1
            path_part, _, anchor = target.partition("#")
            resolved = document if not path_part else os.path.normpath(
                os.path.join(os.path.dirname(document), path_part))
            if not os.path.exists(resolved):
                failures.append(f"{shown}:{number}: {target}: no such file")
                continue
            if anchor and resolved.endswith(".md") and anchor not in anchors_of(resolved):
                failures.append(f"{shown}:{number}: {target}: no heading with anchor #{anchor}")
    for failure in failures:
        print("FAIL:", failure)
    print(f"docs_links_test: {links} relative links in {len(documents)} documents, "
          f"{len(failures)} broken")
    return not failures and links > 0


def self_test():
    """The slug rules on headings of this project whose ids GitHub is known to give."""
    cases = {
        "In a pipeline: stops, failures, latency, capacity":
            "in-a-pipeline-stops-failures-latency-capacity",
        "Redis Streams, exactly once (`dedup --from`)": "redis-streams-exactly-once-dedup---from",
        "A stage that loses nothing: `--journal`": "a-stage-that-loses-nothing---journal",
        "Filters of the server's own Bloom engine": "filters-of-the-servers-own-bloom-engine",
        "Managed services: ACL users, renamed and refused commands":
            "managed-services-acl-users-renamed-and-refused-commands",
        "Redis module (redbloom.so)": "redis-module-redbloomso",
    }
    wrong = [(h, github_slug(heading_text(h)), s) for h, s in cases.items()
             if github_slug(heading_text(h)) != s]
    for heading, got, want in wrong:
        print(f"FAIL: slug of {heading!r} is {got!r}, GitHub gives {want!r}")
    return not wrong


def check_files_named(source_dir):
    """The layers and the headers: a file nobody placed is a file whose layer nobody checked."""
    with open(os.path.join(source_dir, "docs", "design.md"), encoding="utf-8") as f:
        design = f.read()
    layers = design[design.index("## Layers"):design.index("\n## ", design.index("## Layers") + 1)]
    named = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[ch]pp)?", layers))
    unplaced = []
    for folder in ("src", "cli", "module", os.path.join("python", "src"),
                   os.path.join("include", "redbloom")):
        for root, _, files in os.walk(os.path.join(source_dir, folder)):
            for name in sorted(files):
                if name.endswith((".cpp", ".hpp")) and name not in named and \
                        name.rsplit(".", 1)[0] not in named:
                    unplaced.append(os.path.relpath(os.path.join(root, name), source_dir))
    with open(os.path.join(source_dir, "docs", "library.md"), encoding="utf-8") as f:
        library = f.read()
    headers = sorted(os.listdir(os.path.join(source_dir, "include", "redbloom")))
    unlisted = [h for h in headers if h.endswith(".hpp") and f"redbloom/{h}" not in library]
    internal = set()
    for root, _, files in os.walk(os.path.join(source_dir, "src")):
        internal.update(name for name in files if name.endswith((".cpp", ".hpp")))
    internal -= set(headers)
    pointers = []
    for header in headers:
        with open(os.path.join(source_dir, "include", "redbloom", header), encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if line.lstrip().startswith("#include"):
                    continue
                for name in re.findall(r"[A-Za-z_][A-Za-z0-9_]*\.[ch]pp", line):
                    if name in internal:
                        pointers.append(f"include/redbloom/{header}:{number}: names {name}")
    for pointer in pointers:
        print(f"FAIL: an installed header points at an internal file: {pointer}")
    for path in unplaced:
        print(f"FAIL: docs/design.md's Layers section does not name {path}")
    for header in unlisted:
        print(f"FAIL: docs/library.md does not list the installed header redbloom/{header}")
    print(f"docs files named: {len(unplaced)} source files without a layer, "
          f"{len(unlisted)} installed headers unlisted, "
          f"{len(pointers)} pointers from installed headers to internal files")
    return not unplaced and not unlisted and not pointers


if __name__ == "__main__":
    arguments = sys.argv[1:]
    if arguments and arguments[0] == "--files":
        sys.exit(0 if check_files_named(arguments[1] if len(arguments) > 1 else ".") else 1)
    ok = self_test()
    ok = check(arguments[0] if arguments else ".") and ok
    sys.exit(0 if ok else 1)
