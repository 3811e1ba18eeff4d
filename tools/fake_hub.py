#!/usr/bin/env python3
# tools/fake_hub.py: a loopback stand-in for the Hugging Face hub's HTTP API (revision, tree,
# resolve with LFS redirects, Range), plus PUT/GET of plain files, that misbehaves on request.
"""Serves the fake hub tree ROOT/hub/{models,datasets}/ORG/NAME/... on 127.0.0.1 (a free port,
written to PORT_FILE) for tests/test_fetch.sh and tests/test_baseline_url.sh.

A repository's commit is the sha1 of its files' paths and git blob ids, so it changes when the
test changes a file. Files named *.safetensors, *.bin or listed in the repo's .lfs file are LFS
files: resolve/ answers 302 to http://localhost:PORT/cdn/SHA256 (another host name, as the hub's
CDN is; it needs no token) with X-Linked-Etag (their sha256) and X-Linked-Size, as the hub does; other files come with ETag = their git blob id. A repo's .siblings.json, when
present, replaces the file list the API gives (hostile names).

Faults: ROOT/faults.json is read at every request:
  {"token": "T",                       every request needs "Authorization: Bearer T" (else 401)
   "rules": [{"match": "SUBSTRING", "method": "GET", "fault": KIND, "code": 500, "times": 1}]}
KIND: status (answer `code`), cut (half the body, then close), drip (a byte every 0.5 s),
endless (more body than announced), bigheaders (300 KiB of headers), redirect_loop,
redirect_scheme (a 302 to file:///etc/passwd), redirect_http (a 302 to the same path over
plain http: refused by a client of an https endpoint), badsha (a wrong X-Linked-Etag), badsize (an X-Linked-Size with an "x" after the
digits), badetag (an ETag
of "../../x"), ignore_range (a 200 to a Range request), shift_range (a 206 to "Range: bytes=N-"
that sends from N + `shift` (default 16, may be negative), with a Content-Range saying so), slow
(the body in 20 pieces, `pause` seconds (default 0.05) after each). `times` bounds how often a rule fires
(default always); counters restart when faults.json changes. Every request is logged to
ROOT/requests.log as "METHOD PATH range=R auth=yes|no|none" (never the token itself).
PUT /upload/NAME stores ROOT/uploads/NAME; GET /files/NAME serves ROOT/files/NAME.

The server stops by itself after --lifetime seconds or when its parent process is gone; every
loop that sends data is bounded. With --tls CERT KEY it speaks https (the LFS redirects too).
Usage: fake_hub.py ROOT PORT_FILE [--lifetime S] [--tls CERT KEY]
"""
import hashlib
import http.server
import json
import os
import socket
import ssl
import sys
import threading
import time
import urllib.parse

LFS_SUFFIXES = (".safetensors", ".bin")
MAX_ENDLESS = 256 << 20
MAX_DRIP = 120


def git_blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Repo:
    """One repository folder: its files, digests and commit."""

    def __init__(self, folder):
        self.folder = folder
        self.files = {}
        lfs_names = set()
        lfs_list = os.path.join(folder, ".lfs")
        if os.path.exists(lfs_list):
            lfs_names = set(open(lfs_list).read().split())
        for base, _, names in os.walk(folder):
            for n in names:
                full = os.path.join(base, n)
                rel = os.path.relpath(full, folder)
                if rel.startswith("."):
                    continue
                data = open(full, "rb").read()
                self.files[rel] = {
                    "data": data,
                    "git": git_blob_id(data),
                    "sha256": hashlib.sha256(data).hexdigest(),
                    "lfs": rel.endswith(LFS_SUFFIXES) or rel in lfs_names,
                }
        listing = "".join(f"{p} {self.files[p]['git']}\n" for p in sorted(self.files))
        self.commit = hashlib.sha1(listing.encode()).hexdigest()
        sib = os.path.join(folder, ".siblings.json")
        self.siblings = json.load(open(sib)) if os.path.exists(sib) else sorted(self.files)


class State:
    def __init__(self, root):
        self.root = root
        self.lock = threading.Lock()
        self.fired = {}
        self.faults_stamp = None

    def faults(self):
        path = os.path.join(self.root, "faults.json")
        try:
            stamp = os.stat(path).st_mtime_ns, os.stat(path).st_size
            data = json.load(open(path))
        except (OSError, ValueError):
            return {}, None
        with self.lock:
            if stamp != self.faults_stamp:
                self.faults_stamp, self.fired = stamp, {}
        return data, stamp

    def take_rule(self, method, path):
        """the first rule matching the request that has not fired `times` times, or None"""
        data, stamp = self.faults()
        for i, rule in enumerate(data.get("rules", [])):
            if rule.get("match", "") not in path:
                continue
            if rule.get("method", method) != method:
                continue
            with self.lock:
                n = self.fired.get(i, 0)
                if "times" in rule and n >= rule["times"]:
                    continue
                self.fired[i] = n + 1
            return rule
        return None

    def log(self, line):
        with self.lock, open(os.path.join(self.root, "requests.log"), "a") as f:
            f.write(line + "\n")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 30

    def log_message(self, fmt, *args):
        pass

    # ---- plumbing -----------------------------------------------------------------------------
    def auth_state(self):
        token = self.server.state.faults()[0].get("token")
        got = self.headers.get("Authorization")
        if got is None:
            return "none", token is None
        ok = token is not None and got == f"Bearer {token}"
        return ("yes" if ok else "no"), (ok or token is None)

    def send_plain(self, code, body=b"", headers=None, head=False):
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def send_json(self, obj, rule, head=False):
        body = json.dumps(obj).encode()
        self.send_body(body, {"Content-Type": "application/json"}, rule, head)

    def send_body(self, body, headers, rule, head):
        """body with Range support, shaped by the fault rule (cut, drip, endless, ...)"""
        kind = rule and rule.get("fault")
        start, code = 0, 200
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes=") and kind != "ignore_range":
            start = int(rng[6:].split("-")[0])
            if start >= len(body):
                return self.send_plain(416, b"", {"Content-Range": f"bytes */{len(body)}"}, head)
            if kind == "shift_range":  # another part than the one asked for, labelled honestly
                start = min(len(body) - 1, max(0, start + rule.get("shift", 16)))
            code = 206
            headers = dict(headers, **{"Content-Range": f"bytes {start}-{len(body) - 1}/{len(body)}"})
        part = body[start:]
        self.send_response(code)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Accept-Ranges", "bytes")
        if kind == "bigheaders":
            for i in range(300):
                self.send_header(f"X-Padding-{i}", "x" * 1000)
        if kind == "endless" and not head:
            self.send_header("Connection", "close")
            self.end_headers()
            return self.send_endless(part)
        self.send_header("Content-Length", str(len(part)))
        self.end_headers()
        if head:
            return None
        if kind == "cut":
            self.wfile.write(part[: len(part) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        elif kind == "slow":
            step = max(1, len(part) // 20)
            for i in range(0, len(part), step):
                self.wfile.write(part[i : i + step])
                self.wfile.flush()
                time.sleep(rule.get("pause", 0.05))
        elif kind == "drip":
            for i in range(min(len(part), MAX_DRIP)):
                self.wfile.write(part[i : i + 1])
                self.wfile.flush()
                time.sleep(0.5)
            self.close_connection = True
        else:
            self.wfile.write(part)
        return None

    def send_endless(self, part):
        self.close_connection = True
        sent, chunk = 0, (part or b"x") * (65536 // max(1, len(part)) + 1)
        try:
            while sent < MAX_ENDLESS:
                self.wfile.write(chunk)
                sent += len(chunk)
        except OSError:
            pass

    # ---- routes -------------------------------------------------------------------------------
    def repo(self, kind, repo_id):
        folder = os.path.join(self.server.state.root, "hub", kind, repo_id)
        if ".." in repo_id.split("/") or not os.path.isdir(folder):
            return None
        return Repo(folder)

    def api(self, parts, rule, head):
        # /api/{models,datasets}/ORG/NAME/{revision,tree}/REV
        if len(parts) < 5 or parts[1] not in ("models", "datasets"):
            return self.send_plain(404, b"no such route", head=head)
        for i, p in enumerate(parts):
            if p in ("revision", "tree") and i >= 3:
                repo = self.repo(parts[1], "/".join(parts[2:i]))
                if repo is None:
                    return self.send_plain(404, b'{"error":"Repository not found"}', head=head)
                if p == "revision":
                    sib = [{"rfilename": n} for n in repo.siblings]
                    return self.send_json({"id": "/".join(parts[2:i]), "sha": repo.commit,
                                           "siblings": sib}, rule, head)
                tree = []
                for path, f in sorted(repo.files.items()):
                    e = {"type": "file", "oid": f["git"], "size": len(f["data"]), "path": path}
                    if f["lfs"]:
                        e["lfs"] = {"oid": f["sha256"], "size": len(f["data"]), "pointerSize": 134}
                    tree.append(e)
                return self.send_json(tree, rule, head)
        return self.send_plain(404, b"no such route", head=head)

    def resolve(self, kind, parts, rule, head):
        # [datasets/]ORG/NAME/resolve/REV/PATH
        i = parts.index("resolve")
        repo = self.repo(kind, "/".join(parts[:i]))
        rev, path = parts[i + 1], "/".join(parts[i + 2 :])
        if repo is None or path not in repo.files:
            return self.send_plain(404, b"Entry not found", {"X-Error-Code": "EntryNotFound"}, head)
        f = repo.files[path]
        fault = rule and rule.get("fault")
        headers = {"X-Repo-Commit": repo.commit, "ETag": f'"{f["git"]}"'}
        if fault == "badetag":
            headers["ETag"] = '"../../x"'
        if f["lfs"]:
            sha = f["sha256"] if fault != "badsha" else hashlib.sha256(f["data"] + b"!").hexdigest()
            size = str(len(f["data"])) + ("x" if fault == "badsize" else "")
            headers.update({"X-Linked-Etag": f'"{sha}"', "X-Linked-Size": size,
                            "ETag": f'"{sha}"', "Location": f"{self.server.scheme}://localhost:{self.server.server_address[1]}/cdn/{kind}/{'/'.join(parts[:i])}/{f['sha256']}"})
            if fault == "bigheaders":
                headers.update({f"X-Padding-{k}": "x" * 1000 for k in range(300)})
            return self.send_plain(302, b"", headers, head)
        return self.send_body(f["data"], headers, rule, head)

    def cdn(self, parts, rule, head):
        # /cdn/KIND/ORG/NAME/SHA256
        repo = self.repo(parts[1], "/".join(parts[2:-1]))
        for f in (repo.files.values() if repo else []):
            if f["sha256"] == parts[-1]:
                return self.send_body(f["data"], {"ETag": f'"{f["sha256"]}"'}, rule, head)
        return self.send_plain(404, b"no such blob", head=head)

    def plain_file(self, parts, rule, head):
        path = os.path.join(self.server.state.root, "files", parts[-1])
        if len(parts) != 2 or not os.path.isfile(path):
            return self.send_plain(404, b"no such file", head=head)
        return self.send_body(open(path, "rb").read(), {}, rule, head)

    def route(self, head):
        url = urllib.parse.urlsplit(self.path)
        parts = [urllib.parse.unquote(p) for p in url.path.split("/") if p]
        auth, allowed = self.auth_state()
        self.server.state.log(f"{self.command} {url.path} range={self.headers.get('Range', '-')} auth={auth}")
        rule = self.server.state.take_rule(self.command, url.path)
        if not allowed and (not parts or parts[0] != "cdn"):  # the CDN's URLs stand for a token
            return self.send_plain(401, b'{"error":"Invalid credentials"}', head=head)
        kind = rule and rule.get("fault")
        if kind == "status":
            return self.send_plain(rule.get("code", 500), b"fault", {"Retry-After": "0"}, head)
        if kind == "redirect_loop":
            return self.send_plain(302, b"", {"Location": url.path}, head)
        if kind == "redirect_http":
            return self.send_plain(302, b"", {"Location": f"http://127.0.0.1:{self.server.server_address[1]}{url.path}"}, head)
        if kind == "redirect_scheme":
            return self.send_plain(302, b"", {"Location": "file:///etc/passwd"}, head)
        if parts and parts[0] == "api":
            return self.api(parts, rule, head)
        if parts and parts[0] == "cdn" and len(parts) >= 4:
            return self.cdn(parts, rule, head)
        if parts and parts[0] == "files":
            return self.plain_file(parts, rule, head)
        if "resolve" in parts:
            is_ds = parts[0] == "datasets"
            return self.resolve("datasets" if is_ds else "models", parts[1:] if is_ds else parts,
                                rule, head)
        return self.send_plain(404, b"no such route", head=head)

    def do_GET(self):
        self.route(False)

    def do_HEAD(self):
        self.route(True)

    def do_PUT(self):
        auth, allowed = self.auth_state()
        self.server.state.log(f"PUT {self.path} range=- auth={auth}")
        n = int(self.headers.get("Content-Length", "0"))
        if n > 64 << 20:
            return self.send_plain(413, b"too large")
        body = self.rfile.read(n)
        parts = [p for p in urllib.parse.urlsplit(self.path).path.split("/") if p]
        if not allowed:
            return self.send_plain(401, b"")
        if len(parts) != 2 or parts[0] != "upload" or parts[1].startswith("."):
            return self.send_plain(404, b"")
        os.makedirs(os.path.join(self.server.state.root, "uploads"), exist_ok=True)
        with open(os.path.join(self.server.state.root, "uploads", parts[1]), "wb") as f:
            f.write(body)
        return self.send_plain(201, b"")


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: fake_hub.py ROOT PORT_FILE [--lifetime S]")
    root, port_file, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    lifetime = float(args[args.index("--lifetime") + 1]) if "--lifetime" in args else 600
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.scheme = "http"
    if "--tls" in args:
        i = args.index("--tls")
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args[i + 1], args[i + 2])
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
        server.scheme = "https"
    server.state = State(root)
    tmp = port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, port_file)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    parent, end = os.getppid(), time.monotonic() + lifetime
    while time.monotonic() < end and os.getppid() == parent:
        time.sleep(0.2)
    server.shutdown()


if __name__ == "__main__":
    main()
