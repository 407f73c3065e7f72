#!/usr/bin/env python3
"""leasehold's credentials chain against botocore's, in the same environments.

Serves, on 127.0.0.1, the endpoints credentials come from, each speaking its
documented protocol: EC2's metadata service (IMDSv2: PUT /latest/api/token,
then the role and its credentials), the container endpoint (with its
Authorization token), and STS's query API (AssumeRole,
AssumeRoleWithWebIdentity; XML replies whose keys are derived from what was
asked, so that two clients asking the same get the same keys). For each
scenario (environment variables and the files they name), it runs
credentials_tool (leasehold) and a child Python with botocore, each in an
environment holding only the scenario's variables, and requires:

- the same access key id and the same SHA-256 of the secret key and the
  session token (neither program prints a secret);
- the same requests to the endpoints: method, path and query, and the
  headers that carry meaning (IMDS's token headers, the container's
  Authorization and Accept, STS's Content-Type, the form's parameters, and
  the SigV4 Authorization's credential scope and signed headers; a
  generated role session name compares by its form alone).

The botocore that runs is the interpreter's (sys.executable, or
--botocore-python). It prints its version and what it could not check,
found by looking for the feature rather than trusting a version number:
Debian 12's botocore (1.29) reads no AWS_ENDPOINT_URL_STS (the child then
hands its STS client the endpoint itself, so only leasehold's reading of the
variable is checked) and no AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE (that
scenario is then skipped); a newer one (1.43 was run by hand) checks both.
The child refuses any connection off loopback, so that no scenario can
reach AWS.

Usage: credentials_botocore_test.py PATH_TO_credentials_tool [--botocore-python PY]
Exits 0 when every scenario matches.
"""

import argparse
import hashlib
import http.server
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import urllib.parse
from datetime import datetime, timedelta, timezone

EXPIRES = (datetime.now(timezone.utc) + timedelta(hours=6)).strftime("%Y-%m-%dT%H:%M:%SZ")

# The child that asks botocore. Prints one JSON line like credentials_tool's.
BOTOCORE_CHILD = r"""
import hashlib, json, os, socket, sys
_connect = socket.socket.connect
def loopback_only(self, address):
    host = address[0] if isinstance(address, tuple) else address
    if host not in ("127.0.0.1", "::1", "localhost"):
        raise OSError("the test refuses a connection to " + str(host))
    return _connect(self, address)
socket.socket.connect = loopback_only
import botocore, botocore.session, botocore.credentials, botocore.configprovider
reads_endpoint_env = hasattr(botocore.configprovider, "ConfiguredEndpointProvider")
if not reads_endpoint_env and os.environ.get("AWS_ENDPOINT_URL_STS"):
    create = botocore.session.Session.create_client
    def with_sts_endpoint(self, service_name, *args, **kwargs):
        if service_name == "sts":
            kwargs.setdefault("endpoint_url", os.environ["AWS_ENDPOINT_URL_STS"])
        return create(self, service_name, *args, **kwargs)
    botocore.session.Session.create_client = with_sts_endpoint
out = {}
try:
    creds = botocore.session.Session().get_credentials()
    if creds is None:
        out["error"] = "no credentials"
    else:
        f = creds.get_frozen_credentials()
        out["access_key_id"] = f.access_key
        out["secret_sha256"] = hashlib.sha256(f.secret_key.encode()).hexdigest()
        out["token_sha256"] = hashlib.sha256(f.token.encode()).hexdigest() if f.token else ""
except Exception as e:  # the type only: a message could quote a value
    out["error"] = type(e).__name__
print(json.dumps(out))
"""


def derived(*parts):
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16].upper()


class Endpoints(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.log = []
        self.lock = threading.Lock()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.server_address[1]

    def take_log(self):
        with self.lock:
            log, self.log = self.log, []
        return log


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body, content_type="application/json"):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def record(self, body=""):
        headers = {k.lower(): v for k, v in self.headers.items()}
        with self.server.lock:
            self.server.log.append({"method": self.command, "path": self.path,
                                    "headers": headers, "body": body})
        return headers

    def do_PUT(self):
        headers = self.record()
        if self.path == "/latest/api/token" and headers.get("x-aws-ec2-metadata-token-ttl-seconds"):
            return self.reply(200, "IMDS-SESSION-TOKEN", "text/plain")
        self.reply(400, "")

    def do_GET(self):
        headers = self.record()
        if self.path.startswith("/latest/"):
            if headers.get("x-aws-ec2-metadata-token") != "IMDS-SESSION-TOKEN":
                return self.reply(401, "")
            if self.path == "/latest/meta-data/iam/security-credentials/":
                return self.reply(200, "instance-role", "text/plain")
            if self.path == "/latest/meta-data/iam/security-credentials/instance-role":
                return self.reply(200, credentials_json("ASIAIMDS"))
        if self.path.startswith("/container/"):
            if headers.get("authorization") != "container-token":
                return self.reply(401, "{}")
            return self.reply(200, credentials_json("ASIATASK"))
        self.reply(404, "")

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
        self.record(body)
        form = dict(urllib.parse.parse_qsl(body, keep_blank_values=True))
        action = form.get("Action", "")
        signer = re.search(r"Credential=([^/]+)/", self.headers.get("Authorization", ""))
        key = "ASIA" + derived(action, form.get("RoleArn", ""), form.get("WebIdentityToken", ""),
                               signer.group(1) if signer else "")
        xml = ("<{a}Response xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><{a}Result>"
               "<Credentials><AccessKeyId>{k}</AccessKeyId><SecretAccessKey>S{s}</SecretAccessKey>"
               "<SessionToken>T{s}</SessionToken><Expiration>{e}</Expiration></Credentials>"
               "<AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/r/s</Arn>"
               "<AssumedRoleId>AROA:s</AssumedRoleId></AssumedRoleUser></{a}Result>"
               "<ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></{a}Response>"
               ).format(a=action, k=key, s=derived(key), e=EXPIRES)
        self.reply(200, xml, "text/xml")


def credentials_json(key):
    return json.dumps({"Code": "Success", "Type": "AWS-HMAC", "AccessKeyId": key,
                       "SecretAccessKey": "S" + derived(key), "Token": "T" + derived(key),
                       "Expiration": EXPIRES})


def normalised(log):
    """What of each request must match: its line, and the headers and form
    fields that carry meaning."""
    out = []
    for r in log:
        h = r["headers"]
        item = {"method": r["method"], "path": r["path"]}
        for name in ("x-aws-ec2-metadata-token-ttl-seconds", "x-aws-ec2-metadata-token",
                     "accept", "content-type", "x-amz-security-token"):
            if name in h:
                item[name] = h[name]
        if r["path"].startswith("/container/"):
            item["authorization"] = h.get("authorization")
        if r["body"]:
            form = dict(urllib.parse.parse_qsl(r["body"], keep_blank_values=True))
            name = form.get("RoleSessionName", "")
            if re.fullmatch(r"(botocore|leasehold)-session-\d+", name):
                form["RoleSessionName"] = "<generated>"
            item["form"] = form
            auth = h.get("authorization", "")
            m = re.match(r"AWS4-HMAC-SHA256 Credential=([^/]+)/\d{8}/([^/]+)/([^/]+)/aws4_request,"
                         r"\s*SignedHeaders=([^,]+),", auth)
            item["sigv4"] = m.groups() if m else None
        out.append(item)
    return out


def run(cmd, env):
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError("%s exited %d: %s" % (cmd[0], done.returncode, done.stderr[-2000:]))
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("tool")
    parser.add_argument("--botocore-python", default=sys.executable)
    args = parser.parse_args()

    probe = subprocess.run([args.botocore_python, "-c",
                            "import botocore, botocore.configprovider as c, botocore.credentials "
                            "as k; print(botocore.__version__, hasattr(c, "
                            "'ConfiguredEndpointProvider'), hasattr(k.ContainerProvider, "
                            "'ENV_VAR_AUTH_TOKEN_FILE'))"],
                           capture_output=True, text=True, check=True).stdout.split()
    version, reads_endpoint_env, reads_token_file = probe[0], probe[1] == "True", probe[2] == "True"
    print("botocore %s (%s)" % (version, args.botocore_python))
    if not reads_endpoint_env:
        print("  botocore %s reads no AWS_ENDPOINT_URL_STS: the test hands its STS client the "
              "endpoint; leasehold's reading of the variable is checked alone" % version)
    if not reads_token_file:
        print("  botocore %s reads no AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: that scenario is "
              "skipped" % version)

    server = Endpoints()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    tmp = tempfile.TemporaryDirectory(prefix="leasehold-botocore-creds-")
    d = tmp.name

    def write(name, text, mode=0o600):
        path = os.path.join(d, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)
        return path

    process = write("process.sh", "#!/bin/sh\necho '{\"Version\": 1, \"AccessKeyId\": "
                    "\"AKPROCESS\", \"SecretAccessKey\": \"process-secret\", \"SessionToken\": "
                    "\"process-token\", \"Expiration\": \"%s\"}'\n" % EXPIRES, 0o700)
    credentials = write("credentials",
                        "[default]\naws_access_key_id = AKFILE\naws_secret_access_key = file-secret\n"
                        "[base]\naws_access_key_id = AKBASE\naws_secret_access_key = base-secret\n"
                        "aws_session_token = base-token\n")
    config = write("config",
                   "[default]\nregion = eu-west-1\n"
                   "[profile keys]\naws_access_key_id = AKCONFIG\n"
                   "aws_secret_access_key = config-secret\n"
                   "[profile proc]\ncredential_process = %s --flag 'two words'\n"
                   "[profile role]\nrole_arn = arn:aws:iam::123456789012:role/app\n"
                   "source_profile = base\nrole_session_name = lh-interop\nexternal_id = ext-1\n"
                   "duration_seconds = 1800\n"
                   "[profile generated]\nrole_arn = arn:aws:iam::123456789012:role/gen\n"
                   "source_profile = base\n"
                   "[profile chained]\nrole_arn = arn:aws:iam::123456789012:role/top\n"
                   "source_profile = role\nrole_session_name = lh-top\n"
                   "[profile from-task]\nrole_arn = arn:aws:iam::123456789012:role/task\n"
                   "credential_source = EcsContainer\nrole_session_name = lh-task\n"
                   "[profile from-instance]\nrole_arn = arn:aws:iam::123456789012:role/inst\n"
                   "credential_source = Ec2InstanceMetadata\nrole_session_name = lh-inst\n"
                   % process)
    web_token = write("web-token", "eyJhbGciOiJSUzI1NiJ9.web-identity")
    container_token = write("container-token", "container-token")

    files = {"AWS_CONFIG_FILE": config, "AWS_SHARED_CREDENTIALS_FILE": credentials}
    imds = {"AWS_EC2_METADATA_SERVICE_ENDPOINT": server.url}
    sts = {"AWS_ENDPOINT_URL_STS": server.url, "AWS_DEFAULT_REGION": "eu-west-1"}
    container = {"AWS_CONTAINER_CREDENTIALS_FULL_URI": server.url + "/container/creds",
                 "AWS_CONTAINER_AUTHORIZATION_TOKEN": "container-token"}
    scenarios = [
        ("environment", {"AWS_ACCESS_KEY_ID": "AKENV", "AWS_SECRET_ACCESS_KEY": "env-secret",
                         "AWS_SESSION_TOKEN": "env-token", **files}, True),
        ("shared credentials file", {**files}, True),
        ("config file keys", {**files, "AWS_PROFILE": "keys"}, True),
        ("credential_process", {**files, "AWS_PROFILE": "proc"}, True),
        ("assume role, source_profile", {**files, **sts, "AWS_PROFILE": "role"}, True),
        ("assume role, generated session name", {**files, **sts, "AWS_PROFILE": "generated"},
         True),
        ("assume role, chained", {**files, **sts, "AWS_PROFILE": "chained"}, True),
        ("assume role, credential_source EcsContainer",
         {**files, **sts, **container, "AWS_PROFILE": "from-task"}, True),
        ("assume role, credential_source Ec2InstanceMetadata",
         {**files, **sts, **imds, "AWS_PROFILE": "from-instance"}, True),
        ("web identity", {**sts, "AWS_WEB_IDENTITY_TOKEN_FILE": web_token,
                          "AWS_ROLE_ARN": "arn:aws:iam::123456789012:role/pod",
                          "AWS_ROLE_SESSION_NAME": "pod-1"}, True),
        ("container endpoint, token variable", {**container}, True),
        ("container endpoint, token file",
         {"AWS_CONTAINER_CREDENTIALS_FULL_URI": server.url + "/container/creds",
          "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": container_token}, reads_token_file),
        ("EC2 instance metadata (IMDSv2)", {**imds}, True),
    ]

    failures = 0
    checked = 0
    for name, variables, runnable in scenarios:
        if not runnable:
            print("SKIP %s" % name)
            continue
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": d, **variables}
        if "AWS_EC2_METADATA_SERVICE_ENDPOINT" not in env:
            env["AWS_EC2_METADATA_DISABLED"] = "true"
        server.take_log()
        ours = run([args.tool], env)
        our_requests = normalised(server.take_log())
        theirs = run([args.botocore_python, "-c", BOTOCORE_CHILD], env)
        their_requests = normalised(server.take_log())
        ours.pop("region", None)
        problems = []
        if ours != theirs:
            problems.append("credentials differ: leasehold %s, botocore %s" % (ours, theirs))
        if "error" in ours:
            problems.append("no credentials: %s" % ours["error"])
        if our_requests != their_requests:
            problems.append("requests differ:\n  leasehold %s\n  botocore  %s"
                            % (json.dumps(our_requests), json.dumps(their_requests)))
        checked += 1
        if problems:
            failures += 1
            print("FAIL %s\n  %s" % (name, "\n  ".join(problems)))
        else:
            print("ok   %s (%s, %d requests)" % (name, ours["access_key_id"], len(our_requests)))
    server.shutdown()
    print("%d passed, %d failed" % (checked - failures, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
