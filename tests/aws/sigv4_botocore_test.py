#!/usr/bin/env python3
"""leasehold's SigV4 signer against botocore's, on generated requests.

DynamoDB: random requests (POST / with X-Amz-Target and the JSON 1.0 content
type, JSON bodies with non-ASCII text, random regions, hosts, header spacing,
timestamps, with and without a session token, and a few GETs with query
strings), signed with botocore.auth.SigV4Auth.

S3: the requests leasehold's S3 client makes (PUT, GET with a range, HEAD,
DELETE and the multipart upload calls), on object keys that an encoder or a
path normaliser could get wrong, built and signed by botocore's own S3 client
(its serializer encodes the key, S3SigV4Auth signs without normalising the
path, payload hash in X-Amz-Content-SHA256 as leasehold's client sends it,
or UNSIGNED-PAYLOAD), path style and virtual-hosted style; and presigned GET
URLs of the same keys (generate_presigned_url).

Each request is signed again by sigv4_sign_tool, which encodes an S3 key as
the S3 client does; the Authorization headers (for S3 also the path and the
payload hash, for a presigned URL its path and every query parameter) must be
byte-identical.

Usage: sigv4_botocore_test.py PATH_TO_sigv4_sign_tool [--count N] [--seed S]
Exits 0 when every request matches; otherwise prints the first mismatch of
each kind (the credentials are throwaway random strings) and exits 1. All
randomness comes from --seed, so a failure replays exactly.
"""

import argparse
import datetime
import json
import random
import string
import subprocess
import sys
from unittest import mock
from urllib.parse import unquote, urlsplit

import botocore.auth
import botocore.session
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
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


# ---------------------------------------------------------------- S3

S3_BUCKET = "lh-media-1"
S3_REGIONS = ["us-east-1", "us-west-2", "eu-west-1", "eu-central-1", "ap-southeast-2"]
# Keys S3 stores as they are and that an encoder or a path normaliser could
# get wrong: spaces, "+", "%" (and "%20" spelled out, which must not be
# decoded), Unicode, "~", dot segments, doubled slashes and query syntax.
# leasehold's S3 client refuses a key with a "." or ".." segment (a browser
# would drop it from a presigned URL), but the signer must still sign such a
# path as S3 does: as sent, never normalised.
S3_KEYS = [
    "a b", "a+b", "a b+c", "100%", "a%20b", "%2F", "%", "café/naïve.txt", "東京/🙂.mp4",
    "\u00a0nbsp", "~user/x~", "a/../b", "./x", "..", ".", "a/./b", "a/..b", "..x/y.", "a/.../b",
    "a//b", "//x", "x//", "dir/", "a?b=c&d=e", "?", "a#b", "k=v;w,x:y@z!$'()*",
    "[a]{b}|c^d`e\\f\"g<h>", "movies/movie 1 (final) v2.mp4",
]
S3_KEY_PIECES = [" ", "+", "%", "%25", "%2B", "~", "é", "東京", "🙂", ".", "..", "/", "//", "?",
                 "&", "=", "#", ";", "'", "*", "\\", "\u00a0", "-", "_"]
S3_OPERATIONS = ["put_object", "get_object", "head_object", "delete_object",
                 "create_multipart_upload", "upload_part", "complete_multipart_upload",
                 "abort_multipart_upload"]
# The headers the signer writes itself; the others botocore signed are given.
SIGNER_HEADERS = {"host", "x-amz-date", "x-amz-content-sha256", "x-amz-security-token"}


def random_s3_key(rng):
    word = lambda: "".join(rng.choices(string.ascii_letters + string.digits, k=rng.randint(1, 4)))
    pieces = [rng.choice(S3_KEY_PIECES + [word(), word()]) for _ in range(rng.randint(1, 6))]
    return "".join(pieces)


def s3_call(rng, operation, key):
    """The parameters of one call of botocore's S3 client, as leasehold makes it."""
    upload_id = "".join(rng.choices(BASE64 + "-_.~", k=rng.randint(8, 40)))
    params = {"Key": key}
    if operation in ("put_object", "upload_part"):
        params["Body"] = random_text(rng, 30).encode("utf-8")
    if operation in ("put_object", "create_multipart_upload"):
        params["ContentType"] = rng.choice(["video/mp4", "application/octet-stream", "image/png"])
    if operation == "get_object":
        first = rng.randint(0, 1 << 30)
        params["Range"] = f"bytes={first}-{first + rng.randint(0, 1 << 24)}"
        if rng.random() < 0.3:
            params["IfMatch"] = '"' + "".join(rng.choices(string.hexdigits.lower(), k=32)) + '"'
    if operation in ("upload_part", "complete_multipart_upload", "abort_multipart_upload"):
        params["UploadId"] = upload_id
    if operation == "upload_part":
        params["PartNumber"] = rng.randint(1, 10000)
    if operation == "complete_multipart_upload":
        params["MultipartUpload"] = {"Parts": [{"ETag": f'"etag{n}"', "PartNumber": n}
                                               for n in range(1, rng.randint(2, 4))]}
    return params


class _Captured(Exception):
    """Stops botocore where it would send a request, with the signed request."""


def _capture(request, **_):
    raise _Captured(request)


def s3_client(rng, style, payload_signing, with_token):
    """A botocore S3 client on throwaway credentials that sends nothing."""
    config = {"s3": {"addressing_style": style, "payload_signing_enabled": payload_signing},
              "signature_version": "s3v4", "retries": {"max_attempts": 1}}
    try:
        # botocore >= 1.36 adds CRC checksums to uploads unless told not to.
        config = Config(request_checksum_calculation="when_required",
                        response_checksum_validation="when_required", **config)
    except TypeError:
        config = Config(**config)
    endpoint = None  # AWS itself: virtual-hosted style
    if style == "path":
        endpoint = rng.choice(["http://127.0.0.1:9000", "https://minio.internal:9443",
                               f"http://localhost:{rng.randint(1024, 65535)}"])
    token = "".join(rng.choices(BASE64, k=rng.randint(40, 400))) if with_token else ""
    credentials = {"access_key": "AKIA" + "".join(rng.choices(string.ascii_uppercase, k=16)),
                   "secret_key": "".join(rng.choices(BASE64, k=40)), "token": token}
    client = botocore.session.get_session().create_client(
        "s3", region_name=rng.choice(S3_REGIONS), endpoint_url=endpoint, config=config,
        aws_access_key_id=credentials["access_key"],
        aws_secret_access_key=credentials["secret_key"], aws_session_token=token or None)
    client.meta.events.register("before-send.s3", _capture)
    return client, credentials, "/" + S3_BUCKET + "/" if style == "path" else "/"


def text(value):
    """A header value or a body as botocore holds it (str, bytes or a stream) as text."""
    if hasattr(value, "getvalue"):
        value = value.getvalue()
    return value.decode("utf-8") if isinstance(value, bytes) else (value or "")


def query_pairs(query):
    """A URL's query as decoded pairs, "" for a name without "=" (S3's "?uploads")."""
    pairs = []
    for part in query.split("&") if query else []:
        name, _, value = part.partition("=")
        pairs.append([unquote(name), unquote(value)])
    return pairs


def tool_input(client_case, url, key, unix_seconds):
    client, credentials, prefix = client_case
    return {"host": url.netloc, "path": prefix, "key": key, "region": client.meta.region_name,
            "service": "s3", "unix_seconds": unix_seconds, **credentials}


def frozen(unix_seconds):
    return freeze_botocore_clock(datetime.datetime(1970, 1, 1) +
                                 datetime.timedelta(seconds=unix_seconds))


def s3_request_case(rng, client_case, key, operation):
    """(what botocore sent, the tool's input for the same request)."""
    unix_seconds = rng.randint(946_684_800, 4_102_444_799)  # 2000 .. 2099
    with frozen(unix_seconds):
        try:
            getattr(client_case[0], operation)(Bucket=S3_BUCKET, **s3_call(rng, operation, key))
            raise AssertionError(f"botocore's {operation} returned without sending")
        except _Captured as stop:
            request = stop.args[0]
    url = urlsplit(request.url)
    authorization = text(request.headers["Authorization"])
    signed = authorization.split("SignedHeaders=")[1].split(",")[0].split(";")
    case = tool_input(client_case, url, key, unix_seconds)
    case.update(method=request.method, query=query_pairs(url.query), body=text(request.body),
                headers=[[name, text(value)] for name, value in request.headers.items()
                         if name.lower() in signed and name.lower() not in SIGNER_HEADERS])
    content_sha256 = text(request.headers["X-Amz-Content-SHA256"])
    if content_sha256 == "UNSIGNED-PAYLOAD":
        case["payload_hash"] = content_sha256
    theirs = {"path": url.path, "authorization": authorization, "content_sha256": content_sha256}
    return theirs, case


def presigned_case(rng, client_case, key):
    unix_seconds = rng.randint(946_684_800, 4_102_444_799)
    expires = rng.choice([1, 60, 300, 3600, 86400, 604800, rng.randint(1, 604800)])
    with frozen(unix_seconds):
        url = urlsplit(client_case[0].generate_presigned_url(
            "get_object", Params={"Bucket": S3_BUCKET, "Key": key}, ExpiresIn=expires))
    case = tool_input(client_case, url, key, unix_seconds)
    own = [pair for pair in query_pairs(url.query) if not pair[0].startswith("X-Amz-")]
    case.update(method="GET", query=own, headers=[], body="", presign_expires_s=expires)
    theirs = {"path": url.path, "query": sorted(url.query.split("&"))}
    return theirs, case


def s3_cases(rng, count):
    """Every key of S3_KEYS through every operation, then `count` random keys
    and operations, then a presigned URL of each key: (kind, theirs, input)."""
    # The payload's hash (as leasehold's client signs) with and without a
    # session token, and UNSIGNED-PAYLOAD, in both addressing styles.
    clients = [s3_client(rng, style, payload_signing, with_token)
               for style in ("path", "virtual")
               for payload_signing, with_token in ((True, False), (True, True), (False, True))]
    keys = S3_KEYS + [random_s3_key(rng) for _ in range(count)]
    calls = [(key, operation) for key in S3_KEYS for operation in S3_OPERATIONS]
    calls += [(key, rng.choice(S3_OPERATIONS)) for key in keys[len(S3_KEYS):]]
    cases = [("request", *s3_request_case(rng, rng.choice(clients), key, operation))
             for key, operation in calls]
    cases += [("presigned URL", *presigned_case(rng, rng.choice(clients), key)) for key in keys]
    return cases


def s3_mismatch(kind, theirs, mine):
    """Where the tool's answer differs from botocore's, or None."""
    if "error" in mine:
        return f"the signer refused the request: {mine['error']}"
    if kind == "presigned URL":
        ours = {"path": mine["path"], "query": sorted(mine["query"].split("&"))}
    else:
        ours = {name: mine.get(name) for name in ("path", "authorization", "content_sha256")}
    for name, value in theirs.items():
        if ours[name] != value:
            return f"{name}:\n  botocore: {value}\n  ours:     {ours[name]}"
    return None


# ---------------------------------------------------------------- main


def run_tool(tool, inputs):
    """The tool's answers to `inputs`, one each, or None after saying why not."""
    stdin = "".join(json.dumps(case) + "\n" for case in inputs)
    run = subprocess.run([tool], input=stdin, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        print(f"sigv4_sign_tool failed ({run.returncode}): {run.stderr}")
        return None
    answers = [json.loads(line) for line in run.stdout.splitlines()]
    if len(answers) != len(inputs):
        print(f"expected {len(inputs)} answers, got {len(answers)}")
        return None
    return answers


def check_dynamodb(args, rng):
    cases = [random_case(rng) for _ in range(args.count)]
    ours = run_tool(args.tool, [case for _, case in cases])
    if ours is None:
        return False
    for i, ((scheme, case), mine) in enumerate(zip(cases, ours)):
        theirs, their_canonical = botocore_sign(scheme, case)
        if mine.get("authorization") != theirs:
            print(f"DynamoDB mismatch on case {i} (seed {args.seed}):\n"
                  f"  input: {json.dumps(case)}\n  botocore: {theirs}\n  ours:     {mine}\n"
                  f"  botocore canonical request:\n{their_canonical}")
            return False
    with_token = sum(bool(case["token"]) for _, case in cases)
    print(f"DynamoDB: {len(cases)} requests ({with_token} with a session token): "
          f"Authorization identical to botocore's")
    return True


def check_s3(args, rng):
    cases = s3_cases(rng, args.count // 2)
    ours = run_tool(args.tool, [case for _, _, case in cases])
    if ours is None:
        return False
    for i, ((kind, theirs, case), mine) in enumerate(zip(cases, ours)):
        mismatch = s3_mismatch(kind, theirs, mine)
        if mismatch:
            print(f"S3 {kind} mismatch on case {i} (seed {args.seed}), key {case['key']!r}: "
                  f"{mismatch}\n  input: {json.dumps(case)}\n"
                  f"  our canonical request:\n{mine.get('canonical_request')}")
            return False
    requests = [case for kind, _, case in cases if kind == "request"]
    unsigned = sum(case.get("payload_hash") == "UNSIGNED-PAYLOAD" for case in requests)
    keys = {case["key"] for _, _, case in cases}
    print(f"S3: {len(requests)} requests ({unsigned} with UNSIGNED-PAYLOAD, the rest with the "
          f"payload's hash) and {len(cases) - len(requests)} presigned URLs, on {len(keys)} keys: "
          f"path, Authorization and payload hash, and each URL's path and query, identical to "
          f"botocore's")
    return True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("tool")
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--seed", type=int, default=20120810)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    dynamodb_ok = check_dynamodb(args, rng)
    s3_ok = check_s3(args, rng)
    return 0 if dynamodb_ok and s3_ok else 1


if __name__ == "__main__":
    sys.exit(main())
