#!/usr/bin/env bash
# tests/test_fetch_protocol.sh: `harness fetch` and the hub's answers beyond the plain case, on
# the loopback fake hub (tests/data/fetch/fake_hub_more.py): a HEAD redirected on the hub's own
# host (a renamed repo: relative and absolute Location, with the token) is followed, one to
# another host is not (and the message says so), a loop ends; a server's Retry-After is waited
# up to 3600 s; a repository listing no files is refused with nothing written; the summary counts
# only the bytes this process transferred when it resumes a partial file.
# usage: test_fetch_protocol.sh HARNESS_EXE SOURCE_DIR (needs HARNESS_PYTHON or BUILD/venv)
set -u
H="$1"; SRC="$(cd "$2" && pwd)"
. "$(dirname "$0")/lib.sh"
PY="${HARNESS_PYTHON:-$(cd "$(dirname "$H")" && pwd)/venv/bin/python}"
if ! "$PY" -c 'import http.server' 2>/dev/null; then
  echo "test_fetch_protocol: skipped: no Python at $PY for the loopback hub (set HARNESS_PYTHON)"
  exit 77
fi
S="$T/srv"; R="$S/hub/models/org/tiny"; mkdir -p "$R"
"$PY" "$SRC/tests/data/fetch/fake_hub_more.py" "$S" "$T/port" --lifetime 600 2>"$T/server.err" &
SRV=$!
trap 'kill $SRV 2>/dev/null; rm -rf "$T"' EXIT
wait_until 60 "the loopback server's port file" -- test -s "$T/port"
[ -s "$T/port" ] || { echo "test_fetch_protocol: the fake hub did not start:"; cat "$T/server.err"; exit 1; }
PORT="$(cat "$T/port")"
export HF_ENDPOINT="http://127.0.0.1:$PORT" HF_HOME="$T/hfhome"
export HARNESS_NET_BACKOFF_MS=1 HARNESS_NET_RETRIES=1 HF_HUB_DOWNLOAD_TIMEOUT=2 HF_HUB_ETAG_TIMEOUT=5
unset HF_TOKEN HUGGING_FACE_HUB_TOKEN HF_TOKEN_PATH HF_HUB_OFFLINE HF_HUB_CACHE HUGGINGFACE_HUB_CACHE
n_faults=0
faults() { n_faults=$((n_faults+1)); printf '{"n": %d, %s}\n' "$n_faults" "$1" >"$S/faults.json"; }
faults '"rules": []'

printf '{"model_type": "gpt2"}\n' >"$R/config.json"; : >"$R/empty.txt"
head -c 300000 /dev/urandom >"$R/model.safetensors"
CFG_BYTES="$(wc -c <"$R/config.json")"; ST_BYTES="$(wc -c <"$R/model.safetensors")"
whole() { # CACHE REPO_FOLDER WHAT: every file of the repo in the snapshot
  local snap; snap="$(ls -d "$1/$2/snapshots/"* 2>/dev/null | head -1)"
  for f in config.json empty.txt model.safetensors; do
    cmp -s "$R/$f" "$snap/$f" && pass || fail "$3: $f differs or is missing"
  done
}

# ---- a HEAD redirected on the hub's own host: followed, as huggingface_hub does ---------------
# org/old is org/tiny renamed: the API and resolve/ answer 307 to the new name
moved() { # LOCATION_STYLE [METHOD]: rules moving /org/old/ to /org/tiny/
  local m=""; [ -n "${2:-}" ] && m="\"method\": \"$2\", "
  printf '{"match": "/org/old/", %s"fault": "moved", "from": "/org/old/", "to": "/org/tiny/", "location": "%s"}' "$m" "$1"
}
faults "\"rules\": [$(moved relative)]"
: >"$S/requests.log"
expect 0 "a renamed repo (a relative Location on HEAD)" -- "$H" fetch org/old --cache "$T/c-rel"
whole "$T/c-rel" models--org--old "relative Location"
grep -q "^HEAD /org/tiny/resolve/.*/config.json " "$S/requests.log" && pass || fail "the HEAD followed the redirect to the new name"
faults "\"rules\": [$(moved absolute)]"
expect 0 "a renamed repo (an absolute Location on the same host)" -- "$H" fetch org/old --cache "$T/c-abs"
whole "$T/c-abs" models--org--old "absolute Location"
# the token goes along on the same host, never to the CDN's other host name
faults "\"token\": \"tok-1\", \"rules\": [$(moved relative)]"
: >"$S/requests.log"
expect 0 "a renamed repo with a token" -- env HF_TOKEN=tok-1 "$H" fetch org/old --cache "$T/c-tok"
grep -q "^HEAD /org/tiny/resolve/.* auth=yes" "$S/requests.log" && ! grep -v "^GET /cdn/" "$S/requests.log" | grep -qv "auth=yes" && pass || fail "every request to the hub's host carried the token: $(grep -v 'auth=yes' "$S/requests.log")"
grep "^GET /cdn/" "$S/requests.log" | grep -q . && ! grep "^GET /cdn/" "$S/requests.log" | grep -qv "auth=none" && pass || fail "the token is not sent to the CDN"
# a HEAD redirect to another host is not followed: its answer has no etag, the message says why
faults "\"rules\": [$(moved relative GET), $(moved host HEAD)]"
expect 2 "a HEAD redirected to another host" -- "$H" fetch org/old --cache "$T/c-host"
says "HTTP 307 to http://localhost:$PORT/org/tiny/resolve/"; says "not followed"
[ ! -e "$T/c-host/models--org--old/refs" ] && pass || fail "no ref after a refused file"
faults '"rules": [{"match": "/resolve/", "method": "HEAD", "fault": "redirect_loop"}]'
expect 2 "a HEAD redirect loop on the hub's host" -- "$H" fetch org/tiny --cache "$T/c-loop"
says "more than 10 redirects"

# ---- Retry-After: the server's wait taken up to 3600 s (the process is killed while it waits) --
waits() { # VALUE SHOWN: a 429 with Retry-After VALUE is waited SHOWN seconds
  faults "\"rules\": [{\"match\": \"/api/\", \"fault\": \"retry_after\", \"value\": \"$1\"}]"
  HARNESS_NET_RETRIES=1 "$H" fetch org/tiny --cache "$T/c-wait" >/dev/null 2>"$T/err-wait" & local p=$!
  wait_until 30 "the retry's note" -- grep -q "retry 1 of 1 in" "$T/err-wait"
  grep -q "retry 1 of 1 in $2 s" "$T/err-wait" && pass || fail "Retry-After: $1 is waited $2 s: $(grep retry "$T/err-wait")"
  kill $p 2>/dev/null; wait $p 2>/dev/null
}
waits 120 120.0
waits 99999 3600.0

# ---- a repository that lists no files: refused, nothing written --------------------------------
faults '"rules": []'
mkdir -p "$S/hub/models/org/empty"; echo x >"$S/hub/models/org/empty/x.txt"
printf '[]' >"$S/hub/models/org/empty/.siblings.json"
expect 2 "a repository listing no files" -- "$H" fetch org/empty --cache "$T/c-none"
says "org/empty@main: the repository lists no files"
[ ! -e "$T/c-none/models--org--empty" ] && pass || fail "nothing written for an empty repository: $(find "$T/c-none")"
expect 0 "--include matching none of the files" -- "$H" fetch org/tiny --include '*.none' --cache "$T/c-inc"
says "none of its 3 files matches --include *.none"

# ---- the summary counts the bytes this process transferred --------------------------------------
faults '"rules": [{"match": "/cdn/", "method": "GET", "fault": "cut", "times": 1}]'
expect 0 "a cut resumed in the same run" -- "$H" fetch org/tiny --cache "$T/c-sum"
says "3 downloaded ($((CFG_BYTES + ST_BYTES)) bytes transferred)"
faults '"rules": [{"match": "/cdn/", "method": "GET", "fault": "cut", "times": 1}]'
expect 2 "a cut without retries (a partial file left)" -- env HARNESS_NET_RETRIES=0 "$H" fetch org/tiny --cache "$T/c-part"
part="$(ls "$T/c-part/models--org--tiny/blobs/"*.incomplete 2>/dev/null)"; have="$(wc -c <"$part")"
[ "$have" -gt 0 ] && [ "$have" -lt "$ST_BYTES" ] && pass || fail "a partial file: $have bytes"
faults '"rules": []'
expect 0 "another run resumes the partial file" -- "$H" fetch org/tiny --cache "$T/c-part"
says "1 downloaded ($((ST_BYTES - have)) bytes transferred; 1 resumed from a partial download)"
whole "$T/c-part" models--org--tiny "resumed"
finish
