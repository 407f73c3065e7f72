#!/usr/bin/env python3
"""leasehold's SigV4 signer against botocore's, on generated DynamoDB requests.

Generates random DynamoDB requests (POST / with X-Amz-Target and the JSON 1.0
content type, JSON bodies with non-ASCII text, random regions, hosts, header
spacing, timestamps, with and without a session token, and a few GETs with
query strings), signs each with botocore.auth.SigV4Auth and with
sigv4_sign_tool, and requires byte-identical Authorization headers.

Usage: sigv4_botocore_test.py PATH_TO_sigv4_sign_tool [--count N] [--seed S]
Exits 0 when every request matches; otherwise prints the first mismatch (both
canonical requests; the credentials are throwaway random strings) and exits 1.
All randomness comes from --seed, so a failure replays exactly.
"""

import argparse
import datetime
import json
import random
import string
import subprocess
import sys
from unittest import mock

import botocore.auth
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

OPERATIONS = ["GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "BatchGetItem",
              "CreateTable", "DescribeTable"]
REGIONS = ["us-east-1", "us-west-2", "eu-west-1", "eu-central-1", "ap-southeast-2",
           "sa-east-1", "cn-north-1", "us-gov-west-1", "local"]
UNICODE_SAMPLES = ["é", "ß", "東京", "Ωmega", "🙂", "naïve café", "\u00a0", "\u2028", "ẞ",
                   "\"quoted\"", "back\\slash", "tab\tnew\nline"]
BASE64 = string.ascii_letters + string.digits + "+/="
PRINTABLE = "".join(chr(c) for c in range(0x21, 0x7f))


def random_text(rng, max_len=12):
    parts = [rng.choice([rng.choice(UNICODE_SAMPLES),
                         "".join(rng.choices(string.ascii_letters + string.digits, k=4))])
             for _ in range(rng.randint(0, max_len // 3))]
    return "".join(parts)


def random_value(rng, depth=0):
    kind = rng.randrange(6 if depth < 3 else 3)
    if kind == 0:
        return {"S": random_text(rng)}
    if kind == 1:
        return {"N": str(rng.randint(-10**12, 10**12))}
    if kind == 2:
        return {"BOOL": rng.random() < 0.5}
    if kind == 3:
        return {"L": [random_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]}
    if kind == 4:
        return {"M": {random_text(rng) or "k": random_value(rng, depth + 1)
                      for _ in range(rng.randint(0, 3))}}
    return {"NULL": True}


def random_body(rng, op):
    body = {"TableName": "lh_" + "".join(rng.choices(string.ascii_lowercase, k=6))}
    if op in ("GetItem", "DeleteItem", "UpdateItem"):
        body["Key"] = {"Pk": {"S": "CONN#" + random_text(rng)}}
    if op == "PutItem":
        body["Item"] = {random_text(rng) or "a": random_value(rng) for _ in range(rng.randint(1, 6))}
    if op == "UpdateItem":
        body["UpdateExpression"] = "SET #a = :v"
        body["ExpressionAttributeValues"] = {":v": random_value(rng)}
    if rng.random() < 0.2:
        return ""  # an empty body hashes to the empty-string digest
    separators = rng.choice([(",", ":"), (", ", ": ")])
    return json.dumps(body, ensure_ascii=rng.random() < 0.3, separators=separators)


def spaced(rng, value):
    """Surrounds and splits the value with runs of spaces and tabs."""
    pad = lambda: "".join(rng.choices(" \t", k=rng.randint(0, 3)))
    words = value.split(" ")
    return pad() + "".join(w + (pad() or " ") for w in words[:-1]) + words[-1] + pad()


def random_host(rng, region):
    kind = rng.randrange(3)
    if kind == 0:
        return "https", f"dynamodb.{region}.amazonaws.com"
    if kind == 1:
        return "http", f"127.0.0.1:{rng.randint(1024, 65535)}"
    return "http", f"localhost:{rng.randint(1024, 65535)}"


def random_headers(rng, op):
    headers = {rng.choice(["X-Amz-Target", "x-amz-target", "X-AMZ-TARGET"]):
               spaced(rng, f"DynamoDB_20120810.{op}") if rng.random() < 0.3
               else f"DynamoDB_20120810.{op}",
               rng.choice(["Content-Type", "content-type"]): "application/x-amz-json-1.0"}
    if rng.random() < 0.4:
        headers["User-Agent"] = "leasehold/0.1 " + "".join(rng.choices(PRINTABLE, k=8))
    if rng.random() < 0.2:
        headers["X-Amzn-Trace-Id"] = "Root=1-" + "".join(rng.choices(string.hexdigits, k=8))
    for i in range(rng.randint(0, 3)):
        name = "X-Test-" + "".join(rng.choices(string.ascii_letters + "-_", k=5)) + str(i)
        headers[name] = spaced(rng, " ".join("".join(rng.choices(PRINTABLE, k=rng.randint(0, 6)))
                                             for _ in range(rng.randint(1, 4))))
    return headers


def random_case(rng):
    op = rng.choice(OPERATIONS)
    region = rng.choice(REGIONS + ["".join(rng.choices(string.ascii_lowercase + "-", k=9))])
    scheme, host = random_host(rng, region)
    case = {
        "method": "POST", "host": host, "path": "/", "query": [],
        "headers": list(random_headers(rng, op).items()), "body": random_body(rng, op),
        "access_key": "AKIA" + "".join(rng.choices(string.ascii_uppercase + string.digits, k=16)),
        "secret_key": "".join(rng.choices(BASE64, k=40)),
        "token": "".join(rng.choices(BASE64, k=rng.randint(40, 400))) if rng.random() < 0.5 else "",
        "region": region, "service": "dynamodb",
        "unix_seconds": rng.randint(31_536_000, 4_102_444_799),  # 1971 .. 2099
    }
    if rng.random() < 0.1:  # the parts DynamoDB never uses: GET, a path, a query
        case["method"] = "GET"
        case["path"] = rng.choice(["/", "/a", "/a-b/c~d", "/x%20y", "/t.1/u_2"])
        case["query"] = list({random_text(rng, 6) or "k": random_text(rng, 6)
                              for _ in range(rng.randint(1, 4))}.items())
    return scheme, case


def freeze_botocore_clock(fixed):
    """Makes SigV4Auth.add_auth see `fixed` (naive UTC) as the current time."""
    # botocore >= 1.31 reads it through botocore.auth.get_current_datetime();
    # older ones (Debian 12 has 1.29) through botocore.auth's `datetime` name.
    if hasattr(botocore.auth, "get_current_datetime"):
        return mock.patch("botocore.auth.get_current_datetime", return_value=fixed)
    fake_datetime = mock.MagicMock()
    fake_datetime.datetime.utcnow.return_value = fixed
    fake_datetime.datetime.strptime = datetime.datetime.strptime
    return mock.patch("botocore.auth.datetime", fake_datetime)


def botocore_sign(scheme, case):
    request = AWSRequest(method=case["method"], url=f"{scheme}://{case['host']}{case['path']}",
                         headers=dict(case["headers"]), data=case["body"].encode("utf-8"),
                         params=dict(case["query"]))
    credentials = Credentials(case["access_key"], case["secret_key"], case["token"] or None)
    auth = SigV4Auth(credentials, case["service"], case["region"])
    fixed = (datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=case["unix_seconds"]))
    with freeze_botocore_clock(fixed):
        auth.add_auth(request)
    authorization = request.headers["Authorization"]
    del request.headers["Authorization"]  # else it would sign itself below
    return authorization, auth.canonical_request(request)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("tool")
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--seed", type=int, default=20120810)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    cases = [random_case(rng) for _ in range(args.count)]
    stdin = "".join(json.dumps(case) + "\n" for _, case in cases)
    run = subprocess.run([args.tool], input=stdin, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        print(f"sigv4_sign_tool failed ({run.returncode}): {run.stderr}")
        return 1
    ours = [json.loads(line) for line in run.stdout.splitlines()]
    if len(ours) != len(cases):
        print(f"expected {len(cases)} answers, got {len(ours)}")
        return 1
    with_token = 0
    for i, ((scheme, case), mine) in enumerate(zip(cases, ours)):
        theirs, their_canonical = botocore_sign(scheme, case)
        with_token += bool(case["token"])
        if mine.get("authorization") != theirs:
            print(f"mismatch on case {i} (seed {args.seed}):\n  input: {json.dumps(case)}\n"
                  f"  botocore: {theirs}\n  ours:     {mine}\n"
                  f"  botocore canonical request:\n{their_canonical}")
            return 1
    print(f"{len(cases)} requests ({with_token} with a session token): "
          f"Authorization identical to botocore's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
