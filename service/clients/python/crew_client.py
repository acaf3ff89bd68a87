#!/usr/bin/env python3
"""A small client of crewd's HTTP API, written against its OpenAPI document
(GET /v1/openapi.json; service/internal/api/openapi.json in the repository),
with Python's standard library alone.

    from crew_client import Client
    c = Client("http://127.0.0.1:8080", token="...")   # or $CREW_URL, $CREW_API_TOKEN
    job = c.submit("factorial", n=5)                   # POST /v1/jobs
    done = c.wait(job["id"], timeout=30)               # GET /v1/jobs/{id} until it ends
    print(done["state"], done.get("result"))

Run as a program: python3 crew_client.py submit-and-wait KIND [JSON-FIELDS]
prints the ended job's record, exit 0 when it succeeded, 1 when it did not
or the API refused (its status and reason on stderr).
"""

import json
import os
import sys
import time
import urllib.error
import urllib.request

# The operations this client calls, as the document names them: check()
# finds each in the server's document, so a renamed route fails loudly.
OPERATIONS = {
    ("post", "/v1/jobs"): "submitJob",
    ("get", "/v1/jobs/{id}"): "getJob",
}

TERMINAL = {"succeeded", "failed", "timed_out", "canceled", "not_run"}


class APIError(Exception):
    """The API's refusal: its HTTP status and its {"error": "..."} text."""

    def __init__(self, status, reason):
        super().__init__(f"{status}: {reason}")
        self.status = status
        self.reason = reason


class Client:
    def __init__(self, url=None, token=None, timeout=30):
        self.url = (url or os.environ.get("CREW_URL") or "http://127.0.0.1:8080").rstrip("/")
        self.token = token if token is not None else os.environ.get("CREW_API_TOKEN", "")
        self.timeout = timeout

    def _call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
                return json.loads(raw) if raw else {}
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                reason = json.loads(raw).get("error", "")
            except ValueError:
                reason = raw.decode(errors="replace")
            raise APIError(e.code, reason) from None

    def check(self):
        """Reads the server's OpenAPI document and checks that every
        operation this client calls is in it, under its path and method."""
        doc = self._call("GET", "/v1/openapi.json")
        if not str(doc.get("openapi", "")).startswith("3."):
            raise APIError(0, "not an OpenAPI 3 document")
        for (method, path), op_id in OPERATIONS.items():
            op = doc.get("paths", {}).get(path, {}).get(method)
            if op is None or op.get("operationId") != op_id:
                raise APIError(0, f"the server's document has no {method.upper()} {path} ({op_id})")
        return doc

    def submit(self, kind, **fields):
        """POST /v1/jobs: the job's kind and its fields ("n", "duration",
        and "timeout", "max_attempts", "queue", "priority", "delay"...).
        Returns {"id", "state"}."""
        return self._call("POST", "/v1/jobs", dict(fields, kind=kind))

    def get(self, job_id):
        """GET /v1/jobs/{id}: the job's record."""
        return self._call("GET", "/v1/jobs/" + job_id)

    def wait(self, job_id, timeout=60, every=0.05):
        """Reads the job until it ends (a terminal state), at most timeout
        seconds; TimeoutError past it."""
        deadline = time.monotonic() + timeout
        while True:
            rec = self.get(job_id)
            if rec.get("state") in TERMINAL:
                return rec
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} still {rec.get('state')} after {timeout} s")
            time.sleep(every)
            every = min(every * 2, 1.0)


def main(argv):
    if len(argv) < 2 or argv[0] != "submit-and-wait":
        print("usage: crew_client.py submit-and-wait KIND [JSON-FIELDS]  (CREW_URL, CREW_API_TOKEN)", file=sys.stderr)
        return 2
    fields = json.loads(argv[2]) if len(argv) > 2 else {}
    c = Client()
    try:
        c.check()
        job = c.submit(argv[1], **fields)
        rec = c.wait(job["id"])
    except APIError as e:
        print(f"crew_client: {e.status} {e.reason}", file=sys.stderr)
        return 1
    print(json.dumps(rec))
    return 0 if rec["state"] == "succeeded" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
