#!/usr/bin/python3
"""Clang's thread-safety analysis over the files that use base/mutex.h.

GCC builds leasehold but ignores the GUARDED_BY and REQUIRES annotations
(src/base/thread_annotations.h). This reads the translation units that
use an annotated lock (in the file itself or in a header beside it) once
more with clang++ -fsyntax-only -Wthread-safety -Werror=thread-safety, taking each
one's macros, include paths and language standard from the build's
compile_commands.json (the rest of a GCC command line does not change how a
file parses). A unity build's translation unit (CMake's unity_N_cxx.cxx,
which includes a batch of a target's files) is read whole if any file of its
batch uses such a lock: the analysis names each finding's own file and line.
Runs them in parallel, one a core, and exits non-zero if any fails.

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
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)
# What is kept of a GCC command line: macros, include paths, the standard.
# Warnings, optimisation, debug information, sanitizers and outputs go.
KEPT_WITH_VALUE = {"-D", "-U", "-I", "-isystem", "-iquote", "-include"}
KEPT_PREFIXES = ("-D", "-U", "-I", "-isystem", "-iquote", "-std=")
DROPPED_WITH_VALUE = {"-o", "-MT", "-MF", "-MQ"}
# CMake's precompiled header (cmake/test_binary.cmake) only gathers headers
# that each file includes itself, so a file parses the same without it.
PRECOMPILED = re.compile(r"cmake_pch\.hxx$")
# GCC-only warnings named in #pragma GCC diagnostic are expected.
THREAD_SAFETY = ["-fsyntax-only", "-Wthread-safety", "-Werror=thread-safety",
                 "-Wno-unknown-warning-option"]


def parse_flags(args):
    """The flags of a GCC command line that change how a file parses."""
    kept = []
    i = 1  # args[0] is the compiler
    while i < len(args):
        a = args[i]
        if a == "-include" and i + 1 < len(args) and PRECOMPILED.search(args[i + 1]):
            i += 1  # GCC's precompiled header, which clang cannot read
        elif a in KEPT_WITH_VALUE and i + 1 < len(args):
            kept += [a, args[i + 1]]
            i += 1
        elif a.startswith(KEPT_PREFIXES):
            kept.append(a)
        elif a in DROPPED_WITH_VALUE:
            i += 1
        i += 1
    return kept


ANNOTATED = re.compile(r"GUARDED_BY|REQUIRES\(|EXCLUDES\(|ACQUIRE\(|\bMutex(Lock)?\b|base/mutex\.h")


def uses_annotations(path):
    """Whether `path`, or a header beside it that it includes, declares or
    uses an annotated lock. The analysis looks at function bodies, so a
    translation unit that only passes through such a header (runtime.h, say)
    has nothing to check that the header's own .cc does not check already."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return False
    if ANNOTATED.search(text):
        return True
    here = os.path.dirname(path)
    for name in INCLUDE.findall(text):
        header = os.path.join(here, os.path.basename(name))
        if os.path.isfile(header):
            with open(header, encoding="utf-8", errors="replace") as f:
                if ANNOTATED.search(f.read()):
                    return True
    return False


# A unity build's translation unit, and the lines that include its batch.
UNITY = re.compile(r"unity_\d+_cxx\.cxx$")
UNITY_INCLUDE = re.compile(r'^#include "([^"]+)"$', re.MULTILINE)


def sources(path):
    """The files `path` compiles: the batch of a unity build's translation
    unit, else the file itself."""
    if not UNITY.search(path):
        return [path]
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return UNITY_INCLUDE.findall(f.read())
    except OSError:
        return []


def arguments(entry):
    return shlex.split(entry["command"]) if "command" in entry else entry["arguments"]


def check(clang, entry):
    flags = parse_flags(arguments(entry))
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
        file = os.path.join(entry["directory"], entry["file"])
        if file not in files and any(uses_annotations(s) for s in sources(file)):
            files.add(file)
            chosen.append(entry)
    if not chosen:
        print("thread-safety check: no translation unit uses base/mutex.h", file=sys.stderr)
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
    print(f"thread-safety check: {len(chosen)} translation units using annotated locks, "
          f"{len(failed)} failed, in {seconds:.1f} s ({os.path.basename(clang)} -Wthread-safety)")
    for name in failed:
        print(f"  FAILED {name}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
