#!/usr/bin/env python3
# tests/data/fetch/fake_hub_more.py: tools/fake_hub.py with more ways to misbehave, for the
# tests/test_fetch_*.sh scripts: redirects on the hub's own host and a chosen Retry-After.
"""Runs tools/fake_hub.py (same arguments, same ROOT/faults.json) with two more fault kinds:

  {"match": "SUBSTRING", "method": "HEAD", "fault": "moved", "from": "/old/", "to": "/tiny/",
   "location": "relative" | "absolute" | "host", "code": 307}
      answers `code` (default 307) with a Location to the request's path with `from` replaced
      by `to`: "relative" (default) a path alone, as the hub answers for a renamed repo;
      "absolute" http://127.0.0.1:PORT/PATH (the same host); "host" http://localhost:PORT/PATH
      (another host name: the CDN's, as far as a client knows).
  {"match": "SUBSTRING", "fault": "retry_after", "code": 429, "value": "120"}
      answers `code` (default 429) with "Retry-After: `value`".

`method` and `times` work as in fake_hub.py; every request is logged to ROOT/requests.log as
"METHOD PATH range=R auth=yes|no|none".
Usage: fake_hub_more.py ROOT PORT_FILE [--lifetime S] [--tls CERT KEY]
"""
import importlib.util
import os
import urllib.parse

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
_spec = importlib.util.spec_from_file_location(
    "fake_hub", os.path.join(SOURCE, "tools", "fake_hub.py"))
fake_hub = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fake_hub)

KINDS = ("moved", "retry_after")


class Handler(fake_hub.Handler):
    def extra_rule(self, method, path):
        """the first rule of KINDS matching the request that has not fired `times` times"""
        state = self.server.state
        data, _ = state.faults()
        for i, rule in enumerate(data.get("rules", [])):
            if rule.get("fault") not in KINDS or rule.get("match", "") not in path:
                continue
            if rule.get("method", method) != method:
                continue
            with state.lock:
                n = state.fired.get(("more", i), 0)
                if "times" in rule and n >= rule["times"]:
                    continue
                state.fired[("more", i)] = n + 1
            return rule
        return None

    def moved_location(self, path, rule):
        target = path.replace(rule["from"], rule["to"], 1)
        port = self.server.server_address[1]
        style = rule.get("location", "relative")
        if style == "absolute":
            return f"{self.server.scheme}://127.0.0.1:{port}{target}"
        if style == "host":
            return f"{self.server.scheme}://localhost:{port}{target}"
        return target

    def route(self, head):
        url = urllib.parse.urlsplit(self.path)
        rule = self.extra_rule(self.command, url.path)
        if rule is None:
            return super().route(head)
        auth, allowed = self.auth_state()
        self.server.state.log(
            f"{self.command} {url.path} range={self.headers.get('Range', '-')} auth={auth}")
        if not allowed:
            return self.send_plain(401, b'{"error":"Invalid credentials"}', head=head)
        if rule["fault"] == "moved":
            return self.send_plain(rule.get("code", 307), b"",
                                   {"Location": self.moved_location(url.path, rule)}, head)
        return self.send_plain(rule.get("code", 429), b"fault",
                               {"Retry-After": str(rule.get("value", "1"))}, head)


if __name__ == "__main__":
    fake_hub.Handler = Handler  # main() builds its server with the module's Handler
    fake_hub.main()
