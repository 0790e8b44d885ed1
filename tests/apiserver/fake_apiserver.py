#!/usr/bin/env python3
"""An independent fake Kubernetes API server for tests, written from the
Kubernetes documentation ("API Concepts": efficient detection of changes,
watch bookmarks, retrieving large results sets in chunks, resource
versions), not from the project's own Rust fake.

Semantics it follows strictly:
- one cluster-wide resourceVersion counter; every object carries the
  version of its last change; lists carry the version they were read at;
- list: `limit` is an upper bound (the server may return fewer items, here
  at most --page), `continue` serves the same snapshot as the first page;
  an expired continue token is `410 Gone` with reason `Expired` and a
  fresh (inconsistent) continue token in the Status's metadata;
- watch: `resourceVersion` unset or "0" starts with synthetic ADDED events
  for every object; an exact version replays the changes after it, or, if
  the history was compacted past it, answers 200 with an ERROR event whose
  Status is 410 Expired; `allowWatchBookmarks` gets BOOKMARK events with
  only metadata.resourceVersion; `timeoutSeconds` ends the stream; objects
  that stop (start) matching the selectors are sent as DELETED (ADDED);
- every response body is sent with chunked transfer encoding, watch events
  one JSON document per line, sometimes split across chunks or several in
  one chunk;
- errors are Status objects; 429/503 carry Retry-After; 401 when the
  bearer token is not the current one; 403 for resources RBAC forbids;
- Accept: ...as=PartialObjectMetadataList gets metadata-only objects.

Control (tests only), JSON over POST /_control/<verb>: apply, delete,
bump, compact, drop, bookmark, expire_continue, fault, forbid, rotate;
GET /_control/requests returns every API request seen.

It prints "port N" when listening, exits when stdin closes or after
--lifetime seconds.
"""

import argparse
import base64
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

RESOURCES = {
    "/api/v1/namespaces": ("namespaces", "Namespace", "v1", False),
    "/api/v1/services": ("services", "Service", "v1", True),
    "/apis/discovery.k8s.io/v1/endpointslices": ("endpointslices", "EndpointSlice", "discovery.k8s.io/v1", True),
    "/api/v1/pods": ("pods", "Pod", "v1", True),
    "/apis/multicluster.x-k8s.io/v1alpha1/serviceimports": ("serviceimports", "ServiceImport",
                                                            "multicluster.x-k8s.io/v1alpha1", True),
}


class State:
    def __init__(self, page, token_file, bookmark_every):
        self.cond = threading.Condition()
        self.rv = 100
        self.objects = {r[0]: {} for r in RESOURCES.values()}  # resource -> key -> object
        self.history = []  # (rv, resource, type, object, previous)
        self.compacted = 0
        self.generation = 0  # bumped to drop every watch
        self.bookmark_generation = 0
        self.snapshots = {}  # continue id -> (rv, items, created)
        self.expired_continue = False
        self.expire_next_continue = 0
        self.faults = []  # [{status, retry_after, count, resource}]
        self.forbidden = set()
        self.requests = []
        self.page = page
        self.token_file = token_file
        self.token = None
        self.bookmark_every = bookmark_every
        if token_file:
            self.rotate()

    def rotate(self):
        self.token = base64.urlsafe_b64encode(os.urandom(24)).decode()
        tmp = self.token_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(self.token + "\n")
        os.replace(tmp, self.token_file)

    def next_rv(self):
        self.rv += 1
        return self.rv


def key_of(obj):
    m = obj.get("metadata") or {}
    return (m.get("namespace") or "", m.get("name") or "")


def labels_match(selector, obj):
    if not selector:
        return True
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for term in split_terms(selector):
        term = term.strip()
        if " notin " in term or " in " in term:
            neg = " notin " in term
            k, vals = term.split(" notin " if neg else " in ", 1)
            vals = {v.strip() for v in vals.strip().strip("()").split(",")}
            present = k.strip() in labels and labels[k.strip()] in vals
            if present == neg:
                return False
        elif "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k.strip()) == v.strip():
                return False
        elif "=" in term:
            k, v = term.replace("==", "=").split("=", 1)
            if labels.get(k.strip()) != v.strip():
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term and term not in labels:
            return False
    return True


def split_terms(selector):
    terms, depth, cur = [], 0, ""
    for ch in selector:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            terms.append(cur)
            cur = ""
        else:
            cur += ch
    terms.append(cur)
    return terms


def field(obj, path):
    cur = obj
    for part in path.split("."):
        cur = (cur or {}).get(part) if isinstance(cur, dict) else None
    return "" if cur is None else str(cur)


def fields_match(selector, obj):
    if not selector:
        return True
    for term in selector.split(","):
        if "!=" in term:
            k, v = term.split("!=", 1)
            if field(obj, k) == v:
                return False
        elif "=" in term:
            k, v = term.replace("==", "=").split("=", 1)
            if field(obj, k) != v:
                return False
    return True


def status(code, reason, message, **meta):
    return {"kind": "Status", "apiVersion": "v1", "metadata": meta, "status": "Failure",
            "message": message, "reason": reason, "code": code}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state = None

    def log_message(self, *args):
        pass

    # --- transport -------------------------------------------------------
    def start(self, code, headers=()):
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()

    def chunk(self, data):
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    def finish_chunks(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def reply(self, code, body, headers=()):
        self.start(code, headers)
        data = json.dumps(body).encode()
        # large bodies go out in several chunks, as a streaming encoder would
        for i in range(0, len(data), 4096):
            self.chunk(data[i:i + 4096])
        self.finish_chunks()

    # --- dispatch --------------------------------------------------------
    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        verb = urlparse(self.path).path.rsplit("/", 1)[-1]
        result = control(self.state, verb, body)
        self.reply(200, result)

    def do_GET(self):
        url = urlparse(self.path)
        st = self.state
        if url.path == "/_control/requests":
            with st.cond:
                self.reply(200, list(st.requests))
            return
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        resource = RESOURCES.get(url.path)
        token = (self.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
        watching = query.get("watch") in ("true", "1")
        with st.cond:
            st.requests.append({"time": time.time(), "path": url.path, "query": query, "token": token,
                                "watch": watching, "status": 0})
            entry = st.requests[-1]
            fault = next((f for f in st.faults if f["count"] > 0), None)
            if fault:
                fault["count"] -= 1
        if st.token and token != st.token:
            entry["status"] = 401
            return self.reply(401, status(401, "Unauthorized", "Unauthorized"))
        if resource is None:
            entry["status"] = 404
            return self.reply(404, status(404, "NotFound", "the server could not find the requested resource"))
        if fault:
            entry["status"] = fault["status"]
            headers = [("Retry-After", str(fault["retry_after"]))] if fault.get("retry_after") is not None else []
            reason = {429: "TooManyRequests", 503: "ServiceUnavailable"}.get(fault["status"], "InternalError")
            body = status(fault["status"], reason, "injected fault")
            if fault.get("retry_after") is not None:
                body["details"] = {"retryAfterSeconds": int(fault["retry_after"])}
            return self.reply(fault["status"], body, headers)
        name, kind, api_version, _ = resource
        if name in st.forbidden:
            entry["status"] = 403
            verb = "watch" if watching else "list"
            return self.reply(403, status(
                403, "Forbidden",
                f'{name} is forbidden: User "system:serviceaccount:kube-system:coredns" cannot {verb} '
                f'resource "{name}" in API group "" at the cluster scope'))
        meta_only = "as=PartialObjectMetadata" in (self.headers.get("Accept") or "")
        entry["status"] = 200
        if watching:
            self.watch(resource, query, meta_only)
        else:
            self.list(resource, query, meta_only, entry)

    # --- list ------------------------------------------------------------
    def list(self, resource, query, meta_only, entry):
        st = self.state
        name, kind, api_version, _ = resource
        limit = int(query.get("limit") or 0)
        token = query.get("continue")
        with st.cond:
            if token:
                snap_id, offset = token.split(":")
                snap = st.snapshots.get(snap_id)
                expired = st.expired_continue or snap is None
                if st.expire_next_continue > 0:
                    st.expire_next_continue -= 1
                    expired = True
                if expired:
                    entry["status"] = 410
                    fresh = self.snapshot(name, query)
                    msg = ("The provided continue parameter is too old to display a consistent list result. "
                           "You can start a new list without the continue parameter, or use the continue "
                           "token in this response to retrieve the remainder of the results. Continuing with "
                           "the provided token results in an inconsistent list - objects that were created, "
                           "modified, or deleted between the time the first chunk was returned and now may "
                           "show up in the list.")
                    return self.reply(410, status(410, "Expired", msg, **{"continue": f"{fresh}:{offset}"}))
                snap_id, offset = snap_id, int(offset)
            else:
                snap_id, offset = self.snapshot(name, query), 0
            rv, items, _ = st.snapshots[snap_id]
        size = min(limit or len(items), st.page) if limit else len(items)
        page = items[offset:offset + size]
        more = offset + size < len(items)
        meta = {"resourceVersion": str(rv)}
        if more:
            meta["continue"] = f"{snap_id}:{offset + size}"
            meta["remainingItemCount"] = len(items) - offset - size
        if meta_only:
            page = [{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]}
                    for o in page]
            body = {"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
                    "items": page}
        else:
            # items of a list carry neither kind nor apiVersion
            page = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in page]
            body = {"kind": kind + "List", "apiVersion": api_version, "metadata": meta, "items": page}
        self.reply(200, body)

    def snapshot(self, name, query):
        st = self.state
        items = [o for _, o in sorted(st.objects[name].items())
                 if labels_match(query.get("labelSelector"), o) and fields_match(query.get("fieldSelector"), o)]
        snap_id = base64.urlsafe_b64encode(os.urandom(6)).decode()
        st.snapshots[snap_id] = (st.rv, items, time.time())
        return snap_id

    # --- watch -----------------------------------------------------------
    def watch(self, resource, query, meta_only):
        st = self.state
        name, kind, api_version, _ = resource
        rv = query.get("resourceVersion") or ""
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
        timeout = float(query.get("timeoutSeconds") or 1800)
        deadline = time.time() + timeout
        lsel, fsel = query.get("labelSelector"), query.get("fieldSelector")
        match = lambda o: o is not None and labels_match(lsel, o) and fields_match(fsel, o)

        def shape(obj):
            obj = dict(obj)
            if meta_only:
                return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]}
            obj["kind"], obj["apiVersion"] = kind, api_version
            return obj

        self.start(200)
        pending = b""
        with st.cond:
            generation, marks = st.generation, st.bookmark_generation
            if rv in ("", "0"):
                initial = [{"type": "ADDED", "object": shape(o)} for _, o in sorted(st.objects[name].items())
                           if match(o)]
                since = st.rv
            elif int(rv) < st.compacted:
                err = status(410, "Expired", f"too old resource version: {rv} ({st.compacted})")
                initial, since = [{"type": "ERROR", "object": err}], None
            else:
                initial, since = [], int(rv)
        lines = [json.dumps(e).encode() + b"\n" for e in initial]
        for i, line in enumerate(lines):
            # split some events across chunks, join others in one
            if i % 3 == 0 and len(line) > 8:
                self.chunk(line[:7])
                self.chunk(line[7:])
            else:
                pending += line
                if i % 3 == 2:
                    self.chunk(pending)
                    pending = b""
        self.chunk(pending)
        if since is None:
            return self.finish_chunks()
        last_bookmark = time.time()
        try:
            while True:
                with st.cond:
                    events = [h for h in st.history if h[0] > since and h[1] == name]
                    if not events:
                        st.cond.wait(0.05)
                        events = [h for h in st.history if h[0] > since and h[1] == name]
                    dropped = st.generation != generation
                    forced = st.bookmark_generation != marks
                    marks = st.bookmark_generation
                    current = st.rv
                out = []
                for ev_rv, _, typ, obj, prev in events:
                    since = ev_rv
                    now_in, was_in = match(obj), match(prev)
                    if typ == "DELETED":
                        # the last state, at the deletion's resourceVersion
                        if was_in:
                            out.append({"type": "DELETED", "object": shape(obj)})
                    elif now_in and not was_in:
                        out.append({"type": "ADDED", "object": shape(obj)})
                    elif now_in:
                        out.append({"type": typ, "object": shape(obj)})
                    elif was_in:
                        out.append({"type": "DELETED", "object": shape(obj)})
                if bookmarks and (forced or time.time() - last_bookmark >= st.bookmark_every):
                    since = max(since, current)
                    mark = {"kind": "PartialObjectMetadata" if meta_only else kind,
                            "apiVersion": "meta.k8s.io/v1" if meta_only else api_version,
                            "metadata": {"resourceVersion": str(since)}}
                    out.append({"type": "BOOKMARK", "object": mark})
                    last_bookmark = time.time()
                    with st.cond:
                        st.requests.append({"time": time.time(), "path": self.path.split("?")[0],
                                            "bookmark": str(since), "watch": True, "query": {}, "status": 0})
                if out:
                    self.chunk(b"".join(json.dumps(e).encode() + b"\n" for e in out))
                if dropped or time.time() >= deadline:
                    break
            self.finish_chunks()
        except (BrokenPipeError, ConnectionResetError):
            pass


def control(st, verb, body):
    with st.cond:
        if verb == "apply":
            name = body["resource"]
            obj = json.loads(json.dumps(body["object"]))
            meta = obj.setdefault("metadata", {})
            key = key_of(obj)
            prev = st.objects[name].get(key)
            meta["resourceVersion"] = str(st.next_rv())
            meta.setdefault("uid", base64.b16encode(os.urandom(8)).decode().lower())
            meta.setdefault("creationTimestamp", "2026-11-24T00:00:00Z")
            meta.setdefault("managedFields", [{"manager": "test", "operation": "Apply", "fieldsType": "FieldsV1",
                                               "fieldsV1": {"f:spec": {}}}])
            st.objects[name][key] = obj
            st.history.append((st.rv, name, "MODIFIED" if prev else "ADDED", obj, prev))
        elif verb == "delete":
            name = body["resource"]
            key = (body.get("namespace") or "", body["name"])
            prev = st.objects[name].pop(key, None)
            if prev is not None:
                last = json.loads(json.dumps(prev))
                last["metadata"]["resourceVersion"] = str(st.next_rv())
                st.history.append((st.rv, name, "DELETED", last, prev))
        elif verb == "bump":
            for _ in range(int(body.get("by", 1))):
                st.next_rv()
        elif verb == "compact":
            st.compacted = st.rv + 1
            st.history = []
        elif verb == "drop":
            st.generation += 1
        elif verb == "bookmark":
            st.bookmark_generation += 1
        elif verb == "expire_continue":
            if body.get("next"):
                st.expire_next_continue = int(body["next"])
            else:
                st.expired_continue = bool(body.get("all", True))
        elif verb == "fault":
            st.faults.append({"status": int(body["status"]), "retry_after": body.get("retry_after"),
                              "count": int(body.get("count", 1))})
        elif verb == "forbid":
            st.forbidden = set(body.get("resources", []))
        elif verb == "rotate":
            st.rotate()
        else:
            return {"error": f"unknown control verb {verb}"}
        st.cond.notify_all()
        return {"resourceVersion": str(st.rv)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--page", type=int, default=500, help="most items one list page holds")
    p.add_argument("--token-file", default=None)
    p.add_argument("--bookmark-every", type=float, default=3600.0)
    p.add_argument("--lifetime", type=float, default=120.0)
    args = p.parse_args()
    Handler.state = State(args.page, args.token_file, args.bookmark_every)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"port {server.server_address[1]}", flush=True)
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    stop.wait(args.lifetime)
    server.shutdown()


if __name__ == "__main__":
    main()
