#!/usr/bin/python3
"""The layers' link graph, as CMake sees it, and the copy of it in docs/architecture.md.

Configures the tree into a temporary folder with `cmake --graphviz`, keeps
the project's own targets (leasehold_* and the `leasehold` binary; not the
test support library nor the package's interface target) and prints them by
floor: a target's floor is one above the highest of the targets it links, so
base/ is on floor 0 and a target only ever points down. Each line names what
the target links publicly, then privately, then the outside libraries it
links itself.

  layer_graph.py                print the graph
  layer_graph.py --check DOC    exit 1, with a diff, if DOC's block differs
  layer_graph.py --write DOC    rewrite DOC's block

The block sits between the lines `<!-- BEGIN link graph -->` and
`<!-- END link graph -->` of DOC.
"""

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
BEGIN = '<!-- BEGIN link graph -->'
END = '<!-- END link graph -->'
PREFIX = 'leasehold_'
# Project targets that are not layers: the tests' support library and the
# interface target find_package(leasehold) gives.
NOT_LAYERS = {'leasehold_testing', 'leasehold_library'}

NODE = re.compile(r'^\s*"(node\d+)" \[ label = "([^"]*)"')
EDGE = re.compile(r'^\s*"(node\d+)" -> "(node\d+)"(?: \[ style = (\w+) \])?')


def graphviz(source):
    """The link graph of the tree at `source`, as (names, edges)."""
    work = tempfile.mkdtemp(prefix='layer-graph-')
    try:
        dot = os.path.join(work, 'graph.dot')
        run = subprocess.run(
            ['cmake', '-S', source, '-B', os.path.join(work, 'build'), '-G', 'Ninja',
             f'--graphviz={dot}'],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if run.returncode != 0:
            sys.exit(f'cmake could not configure {source}:\n{run.stdout}')
        with open(dot, encoding='utf-8') as f:
            text = f.read()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    names, edges = {}, []
    for line in text.splitlines():
        if m := NODE.match(line):
            names[m[1]] = m[2].split('\\n')[0]
        elif m := EDGE.match(line):
            edges.append((m[1], m[2], m[3]))
    return names, edges


def is_layer(name):
    return (name.startswith(PREFIX) or name == 'leasehold') and name not in NOT_LAYERS


def outside(name):
    """How an outside library is named in the block, or None to leave it out."""
    if name.startswith('/') or name == 'Threads::Threads':
        return None  # what another library brings along
    if name.startswith('opencv_'):
        return 'OpenCV'
    return name


def short(name):
    return name[len(PREFIX):] if name.startswith(PREFIX) else name


def render(names, edges):
    public, private, libraries = {}, {}, {}
    for source, target, style in edges:
        a, b = names[source], names[target]
        if not is_layer(a):
            continue
        public.setdefault(a, set())
        private.setdefault(a, set())
        libraries.setdefault(a, set())
        if is_layer(b):
            # An executable's links are drawn dotted (private) and its build
            # dependencies plain; a library's plain links are public.
            if style == 'dotted' or a == 'leasehold':
                private[a].add(b)
            elif style is None:
                public[a].add(b)
        elif (lib := outside(b)) is not None:
            libraries[a].add(lib)
    for name in names.values():
        if is_layer(name):
            for links in (public, private, libraries):
                links.setdefault(name, set())

    floors = {}

    def floor(name, seen=()):
        if name in seen:
            sys.exit(f'the link graph has a cycle through {name}')
        if name not in floors:
            below = public[name] | private[name]
            floors[name] = 1 + max((floor(b, seen + (name,)) for b in below), default=-1)
        return floors[name]

    for name in public:
        floor(name)
    width = max(len(short(n)) for n in floors)
    lines = ['```', f'floor  {"target":<{width}}  links: public | private | outside libraries']
    for level in sorted(set(floors.values()), reverse=True):
        for name in sorted(n for n in floors if floors[n] == level):
            parts = [' '.join(sorted(short(b) for b in public[name])) or '-',
                     ' '.join(sorted(short(b) for b in private[name])) or '-',
                     ' '.join(sorted(libraries[name])) or '-']
            lines.append(f'{level:>5}  {short(name):<{width}}  {" | ".join(parts)}'.rstrip())
    lines.append('```')
    return '\n'.join(lines) + '\n'


def split_doc(path):
    with open(path, encoding='utf-8') as f:
        text = f.read()
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        sys.exit(f'{path} has no block between "{BEGIN}" and "{END}"')
    start += len(BEGIN) + 1
    return text[:start], text[start:end], text[end:]


def differences(doc, graph):
    """A diff from DOC's block to `graph`, empty if they agree."""
    _, block, _ = split_doc(doc)
    return ''.join(difflib.unified_diff(
        block.splitlines(True), graph.splitlines(True),
        f'{os.path.relpath(doc, ROOT)} (the doc)', 'cmake --graphviz (the build)'))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument('--check', metavar='DOC', help="fail if DOC's block is not the graph")
    action.add_argument('--write', metavar='DOC', help="rewrite DOC's block from the graph")
    parser.add_argument('--source', default=ROOT, help='the tree to configure (default: this one)')
    args = parser.parse_args()

    graph = render(*graphviz(args.source))
    if args.write:
        before, _, after = split_doc(args.write)
        with open(args.write, 'w', encoding='utf-8') as f:
            f.write(before + graph + after)
    elif args.check:
        if diff := differences(args.check, graph):
            sys.stdout.write(diff)
            print(f'\n{args.check} does not match the link graph: run '
                  f'scripts/layer_graph.py --write {args.check}', file=sys.stderr)
            return 1
    else:
        sys.stdout.write(graph)
    return 0


if __name__ == '__main__':
    sys.exit(main())
