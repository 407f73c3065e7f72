#!/usr/bin/python3
"""The Dockerfile against the build (dockerfile_check.py), and the check
against copies of the Dockerfile with one mistake planted in each: every
copy must fail, with a message that names its mistake.

The libraries, their packages and the packages' dependencies are read from
this machine once, for the Dockerfile and every copy.

Usage: dockerfile_test.py DOCKERFILE BINARY [MODULE...]   (non-zero on a failure)
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dockerfile_check  # noqa: E402

# (mistake, text of the Dockerfile, what replaces it, words the check must say)
PLANTS = [
    ('a runtime package missing', '      libsqlite3-0 \\\n', '',
     'the runtime stage must apt-get install: libsqlite3-0'),
    ('a package only the codecs module needs', '      libavformat59 \\\n', '',
     'does not install libavformat59'),
    ('USER root', 'USER 10001:10001', 'USER root', 'final USER root is root'),
    ('USER 0', 'USER 10001:10001', 'USER 0:0', 'final USER 0:0 is root'),
    ('no USER', 'USER 10001:10001\n', '', 'has no USER'),
    ('a user by name', 'USER 10001:10001', 'USER leasehold', 'is not numeric'),
    ('health check path /health', '/healthz"', '/health"', 'requests /health, not /healthz'),
    ('health check on port 8081', '${LEASEHOLD_HEALTH_PORT}/healthz', '8081/healthz',
     "the HEALTHCHECK's port is 8081"),
    ('health port variable set to 8081', 'ENV LEASEHOLD_HEALTH_PORT=9090',
     'ENV LEASEHOLD_HEALTH_PORT=8081', 'LEASEHOLD_HEALTH_PORT=8081'),
    ('health check without --fail', 'curl --fail ', 'curl ', 'curl without --fail'),
    ('health check turned off', 'STOPSIGNAL SIGTERM', 'HEALTHCHECK NONE\nSTOPSIGNAL SIGTERM',
     'the HEALTHCHECK is NONE'),
    ('shell-form ENTRYPOINT', 'ENTRYPOINT ["/usr/local/bin/leasehold"]',
     'ENTRYPOINT /usr/local/bin/leasehold', 'the ENTRYPOINT is shell form'),
    ('STOPSIGNAL SIGKILL', 'STOPSIGNAL SIGTERM', 'STOPSIGNAL SIGKILL', 'STOPSIGNAL is SIGKILL'),
    ('a -dev package in the runtime', '      libsqlite3-0 \\\n',
     '      libsqlite3-0 \\\n      libsqlite3-dev \\\n',
     'installs build tools or -dev packages: libsqlite3-dev'),
    ('a compiler in the runtime', '      curl \\\n', '      curl \\\n      g++ \\\n',
     'installs build tools or -dev packages: g++'),
    ('recommends installed', 'apt-get install -y --no-install-recommends',
     'apt-get install -y', 'without --no-install-recommends'),
    ('another base image', 'FROM debian:12-slim AS runtime', 'FROM ubuntu:22.04 AS runtime',
     'is FROM ubuntu:22.04, not debian:12-slim'),
    ('one stage', 'FROM debian:12-slim AS runtime', 'RUN true',
     'it needs a build stage and a runtime stage'),
    ('build packages not from setup.sh', 'RUN scripts/setup.sh --build',
     'RUN apt-get update && apt-get install -y g++ cmake',
     'no build stage runs scripts/setup.sh --build'),
    ('port 9090 not exposed', 'EXPOSE 8080 9090', 'EXPOSE 8080', 'does not EXPOSE 9090'),
    ('no codecs module', 'COPY --from=build /opt/leasehold/lib/leasehold/ '
     '/usr/local/lib/leasehold/\n', '', 'copies no lib/leasehold/'),
    ('a secret', 'ARG REVISION=unknown', 'ARG REVISION=unknown\nENV AWS_SECRET_ACCESS_KEY=x',
     'AWS_SECRET_ACCESS_KEY: a secret'),
]


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    with open(argv[1], encoding='utf-8') as f:
        text = f.read()
    facts = dockerfile_check.facts_of(argv[2:])
    failures = 0
    problems = dockerfile_check.check(text, facts)
    print(f'{"ok  " if not problems else "FAIL"} the Dockerfile as it is passes')
    for p in problems:
        print(f'       {p}')
    failures += bool(problems)
    for mistake, old, new, expected in PLANTS:
        if text.count(old) != 1:
            print(f'FAIL {mistake}: the Dockerfile holds {old!r} {text.count(old)} times, not '
                  'once: plant it anew in dockerfile_test.py')
            failures += 1
            continue
        found = dockerfile_check.check(text.replace(old, new), facts)
        named = [p for p in found if expected in p]
        print(f'{"ok  " if named else "FAIL"} {mistake}: '
              + (named[0] if named else f'not found ({expected!r}); the check said: {found}'))
        failures += not named
    print(f'{failures} failure(s)' if failures else f'all {len(PLANTS)} planted mistakes found')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
