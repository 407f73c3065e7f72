#!/usr/bin/python3
"""Clang's thread-safety analysis over the files that use base/mutex.h.

GCC builds leasehold but ignores the GUARDED_BY and REQUIRES annotations
(src/base/thread_annotations.h). This reads the translation units that
include base/mutex.h, directly or through other headers, once more with
clang++ -fsyntax-only -Wthread-safety -Werror=thread-safety, taking each
one's macros, include paths and language standard from the build's
compile_commands.json (the rest of a GCC command line does not change how a
file parses). Runs them in parallel, one a core, and exits non-zero if any
fails.

Usage: thread_safety_check.py BUILD/compile_commands.json [--clang CLANG++]
"""

import argparse
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
MUTEX_H = os.path.join(ROOT, "src", "base", "mutex.h")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)
# What is kept of a GCC command line: macros, include paths, the standard.
# Warnings, optimisation, debug information, sanitizers and outputs go.
KEPT_WITH_VALUE = {"-D", "-U", "-I", "-isystem", "-iquote", "-include"}
KEPT_PREFIXES = ("-D", "-U", "-I", "-isystem", "-iquote", "-std=")
INCLUDE_DIR_FLAGS = ("-I", "-isystem", "-iquote")
DROPPED_WITH_VALUE = {"-o", "-MT", "-MF", "-MQ"}
# GCC-only warnings named in #pragma GCC diagnostic are expected.
THREAD_SAFETY = ["-fsyntax-only", "-Wthread-safety", "-Werror=thread-safety",
                 "-Wno-unknown-warning-option"]


def parse_flags(args):
    """The flags of a GCC command line that change how a file parses, and the
    include directories among them."""
    kept, include_dirs = [], []
    i = 1  # args[0] is the compiler
    while i < len(args):
        a = args[i]
        if a in KEPT_WITH_VALUE and i + 1 < len(args):
            kept += [a, args[i + 1]]
            if a in INCLUDE_DIR_FLAGS:
                include_dirs.append(args[i + 1])
            i += 1
        elif a.startswith(KEPT_PREFIXES):
            kept.append(a)
            for flag in INCLUDE_DIR_FLAGS:
                if a.startswith(flag):
                    include_dirs.append(a[len(flag):])
                    break
        elif a in DROPPED_WITH_VALUE:
            i += 1
        i += 1
    return kept, include_dirs


def includes_mutex(path, include_dirs):
    """Whether `path` reaches base/mutex.h through quoted includes, each looked
    for beside the including file and then in `include_dirs`."""
    todo, seen = [path], set()
    while todo:
        path = todo.pop()
        real = os.path.realpath(path)
        if real == MUTEX_H:
            return True
        if real in seen:
            continue
        seen.add(real)
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        for name in INCLUDE.findall(text):
            for d in [os.path.dirname(path)] + include_dirs:
                header = os.path.join(d, name)
                if os.path.isfile(header):
                    todo.append(header)
                    break
    return False


def arguments(entry):
    return shlex.split(entry["command"]) if "command" in entry else entry["arguments"]


def check(clang, entry):
    flags, _ = parse_flags(arguments(entry))
    cmd = [clang] + flags + THREAD_SAFETY + [entry["file"]]
    run = subprocess.run(cmd, cwd=entry["directory"], capture_output=True, text=True)
    return entry["file"], run.returncode, run.stdout + run.stderr


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("compile_commands", help="the build's compile_commands.json")
    parser.add_argument("--clang", default="clang++", help="the clang++ to run (default: clang++)")
    opts = parser.parse_args()

    clang = shutil.which(opts.clang)
    if clang is None:
        print(f"thread-safety check: {opts.clang} was not found. It comes with Debian's clang "
              "package: run scripts/setup.sh", file=sys.stderr)
        return 1
    try:
        with open(opts.compile_commands) as f:
            entries = json.load(f)
    except (OSError, ValueError) as e:
        print(f"thread-safety check: cannot read {opts.compile_commands}: {e}", file=sys.stderr)
        return 1

    chosen, files = [], set()
    for entry in entries:
        _, include_dirs = parse_flags(arguments(entry))
        include_dirs = [os.path.join(entry["directory"], d) for d in include_dirs]
        file = os.path.join(entry["directory"], entry["file"])
        if file not in files and includes_mutex(file, include_dirs):
            files.add(file)
            chosen.append(entry)
    if not chosen:
        print("thread-safety check: no translation unit includes base/mutex.h", file=sys.stderr)
        return 1

    start = time.monotonic()
    failed = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        for file, rc, output in pool.map(lambda e: check(clang, e), chosen):
            name = os.path.relpath(file, ROOT)
            if output:
                print(output, end="" if output.endswith("\n") else "\n")
            if rc != 0:
                failed.append(name)
    seconds = time.monotonic() - start
    print(f"thread-safety check: {len(chosen)} translation units including base/mutex.h, "
          f"{len(failed)} failed, in {seconds:.1f} s ({os.path.basename(clang)} -Wthread-safety)")
    for name in failed:
        print(f"  FAILED {name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
