#!/usr/bin/python3
"""docs/architecture.md's link graph is the build's (scripts/layer_graph.py).

The graph is taken once from `cmake --graphviz` of this tree. The doc as it
is must match it; and the check must see a difference, so copies of the doc
with an arrow planted (the lease layer linking the fleet, upward) and an
arrow taken away (the lease layer without the store) must fail it.

Usage: architecture_graph_test.py   (exits non-zero on a failure)
"""

import os
import re
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
sys.path.insert(0, os.path.join(ROOT, 'scripts'))
import layer_graph  # noqa: E402

DOC = os.path.join(ROOT, 'docs', 'architecture.md')
failures = []


def check(what, ok, detail=''):
    print(f'{"ok  " if ok else "FAIL"} {what}')
    if not ok:
        failures.append(what)
        if detail:
            print(detail)


def with_lease_line(text, change):
    """`text` with the public links of the lease layer's line changed by `change`."""
    line = re.compile(r'^(\s+\d+  lease\s+)([^|]*?)( \|.*)$', re.MULTILINE)
    match = line.search(text)
    assert match, 'the doc has no line for the lease layer'
    links = change(match[2].split())
    return text[:match.start()] + match[1] + ' '.join(links) + match[3] + text[match.end():]


def main():
    graph = layer_graph.render(*layer_graph.graphviz(ROOT))
    diff = layer_graph.differences(DOC, graph)
    check('the doc matches the link graph', not diff, diff +
          '\nrun scripts/layer_graph.py --write docs/architecture.md')

    with open(DOC, encoding='utf-8') as f:
        text = f.read()
    work = tempfile.mkdtemp(prefix='architecture-graph-')
    try:
        for what, change in [
                ('a planted arrow (lease -> fleet) is seen', lambda links: sorted(links + ['fleet'])),
                ('a missing arrow (lease -> store) is seen',
                 lambda links: [link for link in links if link != 'store'])]:
            copy = os.path.join(work, 'architecture.md')
            with open(copy, 'w', encoding='utf-8') as f:
                f.write(with_lease_line(text, change))
            diff = layer_graph.differences(copy, graph)
            check(what, bool(diff) and re.search(r'^[-+]\s+\d+  lease ', diff, re.MULTILINE),
                  diff or 'no difference was found')
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f'{3 - len(failures)} passed, {len(failures)} failed')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
