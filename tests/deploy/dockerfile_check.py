#!/usr/bin/python3
"""The Dockerfile checked against the build, without a Docker engine.

No engine runs where the tests run, so the image cannot be built there;
instead the Dockerfile is read as Docker reads it (parser directives,
continuation lines, comments, instructions, stages) and held to what the
image must be:

  - every stage is FROM debian:12-slim (bookworm-slim), and there are at
    least two: a build stage and the runtime stage, the last;
  - the build stage installs its packages with scripts/setup.sh --build (the
    packages a build needs, the same list `make test` builds with) and
    installs the binary with `cmake --install`;
  - every shared library that `ldd` lists for the shipped files (the binary
    and the codecs module it loads) belongs (`dpkg -S`, on this Debian 12)
    to a package the runtime stage installs with apt-get or to one of their
    dependencies; each library a file names itself (NEEDED) belongs to a
    package the runtime stage names;
  - the runtime stage names no compiler, build tool or -dev package,
    installs without recommends and removes apt's lists;
  - its final USER is numeric and not root (0);
  - its HEALTHCHECK requests http://127.0.0.1:PORT/healthz, PORT being 9090
    or $LEASEHOLD_HEALTH_PORT set to 9090, and fails on an answer that is
    not 2xx;
  - its ENTRYPOINT is exec form (the process is PID 1 and gets SIGTERM), a
    STOPSIGNAL is SIGTERM, 8080 and 9090 are exposed, and no ENV or ARG
    names a secret.

Each problem is printed on a line of its own; the exit code is 1 if there is
any. Usage:

  dockerfile_check.py DOCKERFILE BINARY [MODULE...]
"""

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field

BASE_IMAGES = ('debian:12-slim', 'debian:bookworm-slim')
HEALTH_PORT = '9090'
HEALTH_PORT_VAR = 'LEASEHOLD_HEALTH_PORT'
EXPOSED_PORTS = ('8080', '9090')
BUILD_TOOL = re.compile(r'^(g\+\+|gcc|cpp|clang|cmake|ninja-build|make|build-essential|'
                        r'binutils|libtool|autoconf|automake)(-[0-9.]+)?$|-dev$')
SECRET_NAME = re.compile(r'SECRET|PASSWORD|PASSWD|TOKEN|ACCESS_KEY|PRIVATE_KEY', re.IGNORECASE)


@dataclass
class Instruction:
    line: int  # where it starts, from 1
    keyword: str  # upper case
    value: str  # the rest, continuation lines joined


@dataclass
class Stage:
    image: str
    name: str
    instructions: list = field(default_factory=list)

    def all(self, keyword):
        return [i for i in self.instructions if i.keyword == keyword]

    def last(self, keyword):
        found = self.all(keyword)
        return found[-1] if found else None


def parse(text):
    """The instructions of a Dockerfile, as its parser reads them: parser
    directives only before anything else, comment lines dropped (inside a
    continuation too), a line ending in the escape character continued."""
    escape = '\\'
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        directive = re.match(r'^#\s*([a-zA-Z]+)\s*=\s*(\S+)\s*$', lines[i])
        if not directive:
            break
        if directive[1].lower() == 'escape':
            escape = directive[2]
        i += 1
    instructions = []
    current, start = None, 0
    for number, raw in enumerate(lines[i:], start=i + 1):
        stripped = raw.strip()
        if stripped.startswith('#') or not stripped:
            continue
        if current is None:
            current, start = '', number
        continued = raw.rstrip().endswith(escape)
        current += raw.rstrip()[:-len(escape)] + ' ' if continued else raw
        if not continued:
            instructions.append(_instruction(start, current))
            current = None
    if current is not None:
        instructions.append(_instruction(start, current))
    return instructions


def _instruction(line, text):
    keyword, value = (text.strip().split(None, 1) + [''])[:2]
    return Instruction(line, keyword.upper(), value.strip())


def stages(instructions):
    """The stages, each FROM with what follows it; ARG before the first FROM
    belongs to none."""
    out = []
    for ins in instructions:
        if ins.keyword == 'FROM':
            words = [w for w in ins.value.split() if not w.startswith('--')]
            name = words[2] if len(words) >= 3 and words[1].lower() == 'as' else ''
            out.append(Stage(words[0] if words else '', name))
        elif out:
            out[-1].instructions.append(ins)
    return out


def exec_form(value):
    """The JSON array of an exec-form instruction, or None for shell form."""
    if not value.startswith('['):
        return None
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, list) and all(isinstance(a, str) for a in parsed) else None


def shell_text(ins):
    args = exec_form(ins.value)
    return ' '.join(args) if args is not None else ins.value


def apt_installs(stage):
    """Each `apt-get install` of the stage's RUNs: (its package names, without
    :arch or =version, and its options)."""
    found = []
    for run in stage.all('RUN'):
        for command in re.split(r'&&|\|\||[;|\n]', shell_text(run)):
            try:
                words = shlex.split(command)
            except ValueError:
                words = command.split()
            words = [w for w in words if not re.match(r'^[A-Za-z_][A-Za-z0-9_]*=', w)]
            if len(words) < 2 or words[0] not in ('apt-get', 'apt'):
                continue
            if 'install' not in words:
                continue
            args = words[words.index('install') + 1:]
            names = [re.split(r'[:=]', w)[0] for w in args if not w.startswith('-')]
            found.append((names, [w for w in args if w.startswith('-')], run.line))
    return found


def env_values(stage):
    """ENV's names and values in the stage (both `K=V ...` and `K V`)."""
    values = {}
    for ins in stage.all('ENV'):
        words = shlex.split(ins.value)
        if words and '=' not in words[0]:
            values[words[0]] = ' '.join(words[1:])
            continue
        for word in words:
            name, _, value = word.partition('=')
            values[name] = value
    return values


# What this machine says of the shipped files: it is Debian 12, as the
# image is, so that its packages are the image's.

@dataclass
class Library:
    name: str  # as ldd prints it
    path: str  # where ldd found it
    file: str  # the shipped file that links it (its base name)
    needed: bool  # named by the file itself (NEEDED), not only by another library
    owners: set = field(default_factory=set)  # Debian packages that own it


def ldd(path):
    """(name, path) of each library `ldd` lists for `path`, the dynamic loader
    too; path None for one not found. The vDSO is the kernel's, in no file."""
    out = subprocess.run(['ldd', path], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        line = line.strip()
        if m := re.match(r'^(\S+) => not found', line):
            found.append((m[1], None))
        elif m := re.match(r'^(\S+) => (/\S+) \(0x', line):
            found.append((m[1], m[2]))
        elif m := re.match(r'^(/\S+) \(0x', line):
            found.append((os.path.basename(m[1]), m[1]))
    return found


def needed(path):
    """The libraries `path` names itself (its dynamic section's NEEDED)."""
    out = subprocess.run(['readelf', '-d', '--wide', path], capture_output=True, text=True,
                         check=True).stdout
    return set(re.findall(r'\(NEEDED\)\s+Shared library: \[([^\]]+)\]', out))


def path_forms(path):
    """The names dpkg may know a library by: as given and resolved, each with
    and without /usr (Debian 12 merged /lib into /usr/lib, but its packages
    still list most libraries under /lib)."""
    forms = set()
    for p in (path, os.path.realpath(path)):
        forms.add(p)
        forms.add(p[4:] if p.startswith('/usr/') else '/usr' + p)
    return forms


def owners_of(paths):
    """{path: {package}} from one `dpkg-query -S` over every path."""
    if not paths:
        return {}
    result = subprocess.run(['dpkg-query', '-S', *sorted(paths)], capture_output=True,
                            text=True)
    if result.returncode not in (0, 1):
        raise RuntimeError('dpkg-query -S failed: ' + result.stderr)
    owners = {}
    for line in result.stdout.splitlines():
        if line.startswith('diversion by') or ': /' not in line:
            continue
        packages, path = line.split(': /', 1)
        owners.setdefault('/' + path, set()).update(
            p.strip().split(':')[0] for p in packages.split(','))
    return owners


def libraries(files):
    """Every library `ldd` lists for `files`, with its owners, and the
    problems met on the way (a library ldd cannot find)."""
    libs, problems = [], []
    for f in files:
        names = needed(f)
        for name, path in ldd(f):
            if path is None:
                problems.append(f'ldd finds no {name} for {f} on this machine')
                continue
            libs.append(Library(name, path, os.path.basename(f), name in names))
    owners = owners_of(set().union(*(path_forms(lib.path) for lib in libs)))
    for lib in libs:
        for form in path_forms(lib.path):
            lib.owners |= owners.get(form, set())
    return libs, problems


def relations(field_text):
    """Depends-style text as alternatives: [[name, ...], ...]."""
    groups = []
    for group in field_text.split(','):
        names = [re.match(r'\s*([a-z0-9][a-z0-9+.-]*)', alt) for alt in group.split('|')]
        names = [m[1] for m in names if m]
        if names:
            groups.append(names)
    return groups


def installed_relations():
    """({package: [alternatives of Pre-Depends and Depends]}, {virtual: {provider}})
    for every package installed here."""
    out = subprocess.run(
        ['dpkg-query', '-W',
         '-f=${db:Status-Abbrev}\t${Package}\t${Provides}\t${Pre-Depends}, ${Depends}\n'],
        capture_output=True, text=True, check=True).stdout
    depends, provides = {}, {}
    for line in out.splitlines():
        status, package, provided, deps = line.split('\t')
        if not status.startswith('ii'):
            continue
        depends.setdefault(package, []).extend(relations(deps))
        for group in relations(provided):
            provides.setdefault(group[0], set()).add(package)
    return depends, provides


def closure(names, depends, provides):
    """`names` and what they depend on, recursively, as apt would install them
    without recommends. Of alternatives, each one installed here counts: this
    machine may have chosen another than apt would in the image."""
    seen, todo = set(names), list(names)
    while todo:
        for group in depends.get(todo.pop(), []):
            for alt in group:
                for p in ({alt} if alt in depends else provides.get(alt, set())):
                    if p not in seen:
                        seen.add(p)
                        todo.append(p)
    return seen


@dataclass
class Facts:
    files: list
    libs: list
    problems: list
    depends: dict
    provides: dict


def facts_of(files):
    libs, problems = libraries(files)
    depends, provides = installed_relations()
    return Facts(files, libs, problems, depends, provides)


# The checks: each returns a list of problems, one sentence each.

def check_stages(all_stages):
    problems = []
    if len(all_stages) < 2:
        problems.append(f'the Dockerfile has {len(all_stages)} stage(s): it needs a build stage '
                        'and a runtime stage, so that no build tool ships')
    for n, stage in enumerate(all_stages, start=1):
        image = re.sub(r'^(docker\.io/)?(library/)?', '', stage.image).split('@')[0]
        if image not in BASE_IMAGES:
            problems.append(f'stage {n} is FROM {stage.image}, not debian:12-slim '
                            '(the Debian 12 the project builds and tests on)')
    return problems


def check_build_stages(build_stages):
    runs = [shell_text(r) for s in build_stages for r in s.all('RUN')]
    problems = []
    if not any(re.search(r'scripts/setup\.sh\s+--build\b', r) for r in runs):
        problems.append('no build stage runs scripts/setup.sh --build: the image must build '
                        'with the packages the project builds with')
    for names, _, line in (i for s in build_stages for i in apt_installs(s)):
        problems.append(f'line {line}: a build stage installs {" ".join(names)} itself: '
                        'scripts/setup.sh --build installs what the build needs')
    if not any(re.search(r'cmake\s+--install\b', r) for r in runs):
        problems.append('no build stage runs cmake --install: the image ships the install '
                        'that tests/install/ tests')
    return problems


def check_libraries(runtime, facts):
    """Every library ldd lists belongs to a package the runtime installs,
    and each one a shipped file names belongs to a package it names."""
    installs = apt_installs(runtime)
    named = {n for names, _, _ in installs for n in names}
    installed = closure(named, facts.depends, facts.provides)
    problems, missing = list(facts.problems), set()
    for lib in facts.libs:
        where = f'{lib.name} ({lib.path}), which {lib.file} links'
        if not lib.owners:
            problems.append(f'no Debian package owns {where}: the image cannot install it')
        elif lib.needed and not lib.owners & named:
            problems.append(f'the runtime stage does not install {" or ".join(sorted(lib.owners))}'
                            f', which owns {where}')
            missing.add(min(lib.owners))
        elif not lib.owners & installed:
            problems.append(f'{where}, belongs to {" or ".join(sorted(lib.owners))}, which the '
                            'runtime stage neither installs nor gets with a package it installs')
            missing.add(min(lib.owners))
    if missing:
        problems.append('the runtime stage must apt-get install: ' + ' '.join(sorted(missing)))
    tools = sorted(n for n in named if BUILD_TOOL.search(n))
    if tools:
        problems.append('the runtime stage installs build tools or -dev packages: '
                        + ' '.join(tools))
    for _, options, line in installs:
        if '--no-install-recommends' not in options:
            problems.append(f'line {line}: apt-get install without --no-install-recommends')
    if installs and not any('/var/lib/apt/lists' in shell_text(r) for r in runtime.all('RUN')):
        problems.append("the runtime stage keeps apt's lists (rm -rf /var/lib/apt/lists/*)")
    return problems


def check_modules_copied(runtime, facts):
    """The module the binary loads (lib/leasehold/) must be in the image."""
    copies = [c.value for c in runtime.all('COPY') if '--from=' in c.value]
    if len(facts.files) > 1 and not any('lib/leasehold' in c for c in copies):
        return ['the runtime stage copies no lib/leasehold/ from the build: the binary loads '
                'its codecs module from there']
    return []


def check_user(runtime):
    user = runtime.last('USER')
    if user is None:
        return ['the runtime stage has no USER: the image would run as root']
    name, _, group = user.value.partition(':')
    if name in ('root', '0') or group in ('root', '0'):
        return [f"line {user.line}: the runtime stage's final USER {user.value} is root: "
                'it must be a numeric user that is not root (0), e.g. USER 10001:10001']
    if not name.isdigit() or (group and not group.isdigit()):
        return [f"line {user.line}: the runtime stage's final USER '{user.value}' is not "
                'numeric: ECS and Kubernetes (runAsNonRoot) can only verify a numeric UID']
    return []


def seconds(text):
    """A Docker duration (30s, 1m30s, 500ms) in seconds, or None."""
    parts = re.findall(r'(\d+(?:\.\d+)?)(ms|s|m|h)', text)
    if not parts or ''.join(n + u for n, u in parts) != text:
        return None
    scale = {'ms': 0.001, 's': 1, 'm': 60, 'h': 3600}
    return sum(float(n) * scale[u] for n, u in parts)


def check_health_options(health, words):
    options = dict(w[2:].split('=', 1) for w in words if w.startswith('--') and '=' in w)
    problems = []
    for name in ('interval', 'timeout', 'start-period', 'retries'):
        if name not in options:
            problems.append(f'line {health.line}: the HEALTHCHECK sets no --{name}')
    interval, timeout = seconds(options.get('interval', '')), seconds(options.get('timeout', ''))
    if interval and timeout and timeout >= interval:
        problems.append(f'line {health.line}: the HEALTHCHECK --timeout is not under --interval')
    return problems


def check_health_url(health, command, runtime):
    """The command requests /healthz on loopback, on 9090 or the port
    variable, and fails on an answer that is not 2xx."""
    url = re.search(r'https?://([^/:\s"\']+|\[[^\]]+\]):([^/\s"\']+)(/[^\s"\'?#]*)?', command)
    if not url:
        return [f'line {health.line}: the HEALTHCHECK requests no http://127.0.0.1:PORT/healthz']
    host, port, path = url[1], url[2], url[3] or '/'
    problems = []
    if path != '/healthz':
        problems.append(f'line {health.line}: the HEALTHCHECK requests {path}, not /healthz')
    if host not in ('127.0.0.1', 'localhost', '[::1]'):
        problems.append(f'line {health.line}: the HEALTHCHECK requests {host}, not 127.0.0.1 '
                        '(the workers serve /healthz on loopback only)')
    var = re.fullmatch(r'\$\{?' + HEALTH_PORT_VAR + r'(:-\d+)?\}?', port)
    if var:
        value = env_values(runtime).get(HEALTH_PORT_VAR)
        if value != HEALTH_PORT:
            problems.append(f'the runtime stage sets ENV {HEALTH_PORT_VAR}={value}: the '
                            f'workers answer /healthz on {HEALTH_PORT}')
    elif port != HEALTH_PORT:
        problems.append(f"line {health.line}: the HEALTHCHECK's port is {port}: it must be "
                        f'{HEALTH_PORT} or ${HEALTH_PORT_VAR}')
    words = command.split()
    if 'curl' in words and not any(w in ('--fail', '--fail-with-body') or
                                   re.fullmatch(r'-[a-zA-Z]*f[a-zA-Z]*', w) for w in words):
        problems.append(f'line {health.line}: the HEALTHCHECK runs curl without --fail: an '
                        'answer of 503 would count as healthy')
    return problems


def check_healthcheck(runtime):
    health = runtime.last('HEALTHCHECK')
    if health is None:
        return ['the runtime stage has no HEALTHCHECK (GET /healthz)']
    words = health.value.split()
    if 'CMD' not in words:
        return [f'line {health.line}: the HEALTHCHECK is {health.value}, not a CMD that '
                'requests /healthz']
    command = health.value.split('CMD', 1)[1].strip()
    problems = check_health_options(health, words[:words.index('CMD')])
    args = exec_form(command)
    if args is not None and args[:1] != ['CMD-SHELL'] and '$' in command:
        problems.append(f'line {health.line}: the HEALTHCHECK is exec form, so no shell '
                        'expands its variables')
    return problems + check_health_url(health, command, runtime)


def check_process(runtime):
    problems = []
    entry = runtime.last('ENTRYPOINT')
    if entry is None:
        problems.append('the runtime stage has no ENTRYPOINT')
    elif exec_form(entry.value) is None:
        problems.append(f'line {entry.line}: the ENTRYPOINT is shell form ({entry.value}): '
                        '/bin/sh -c would be PID 1 and SIGTERM would not reach leasehold; '
                        'write it as a JSON array')
    stop = runtime.last('STOPSIGNAL')
    if stop is not None and stop.value not in ('SIGTERM', 'TERM', '15'):
        problems.append(f'line {stop.line}: STOPSIGNAL is {stop.value}: leasehold hands over '
                        'and stops cleanly on SIGTERM')
    exposed = {p.split('/')[0] for e in runtime.all('EXPOSE') for p in e.value.split()}
    for port in EXPOSED_PORTS:
        if port not in exposed:
            problems.append(f'the runtime stage does not EXPOSE {port}')
    return problems


def check_secrets(instructions):
    problems = []
    for ins in instructions:
        if ins.keyword not in ('ENV', 'ARG'):
            continue
        for word in shlex.split(ins.value):
            name = word.split('=', 1)[0]
            if SECRET_NAME.search(name):
                problems.append(f'line {ins.line}: {ins.keyword} {name}: a secret must not be '
                                'in the image; the task gives it at run time')
    return problems


def check(text, facts):
    """Every problem of the Dockerfile `text` against `facts` (facts_of())."""
    instructions = parse(text)
    all_stages = stages(instructions)
    problems = check_stages(all_stages)
    if not all_stages:
        return problems
    runtime = all_stages[-1]
    problems += check_build_stages(all_stages[:-1])
    problems += check_libraries(runtime, facts)
    problems += check_modules_copied(runtime, facts)
    problems += check_user(runtime)
    problems += check_healthcheck(runtime)
    problems += check_process(runtime)
    problems += check_secrets(instructions)
    return problems


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    with open(argv[1], encoding='utf-8') as f:
        text = f.read()
    facts = facts_of(argv[2:])
    problems = check(text, facts)
    for p in problems:
        print(f'{argv[1]}: {p}')
    if not problems:
        packages = sorted({p for lib in facts.libs for p in lib.owners})
        print(f'{argv[1]}: ok: {len(facts.libs)} libraries of {len(facts.files)} file(s), '
              f'from {len(packages)} packages, all installed by the runtime stage')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
