#!/usr/bin/env bash
# tests/test_baseline_url.sh: baselines by URL against the loopback server (tools/fake_hub.py):
# `baseline push` (PUT), `baseline pull --sha256` (verified before import, cached for offline
# use), a scenario whose baseline is {"url", "sha256"}, every refusal (exit 2, nothing kept), and
# the token: HARNESS_BASELINE_TOKEN whole or refused, HF_TOKEN never read.
# usage: test_baseline_url.sh HARNESS_EXE SOURCE_DIR (needs HARNESS_PYTHON or BUILD/venv)
set -u
H="$1"; SRC="$(cd "$2" && pwd)"
. "$(dirname "$0")/lib.sh"
PY="${HARNESS_PYTHON:-$(cd "$(dirname "$H")" && pwd)/venv/bin/python}"
if ! "$PY" -c 'import http.server' 2>/dev/null; then
  echo "test_baseline_url: skipped: no Python at $PY for the loopback server (set HARNESS_PYTHON)"
  exit 77
fi
S="$T/srv"; mkdir -p "$S/files"
"$PY" "$SRC/tools/fake_hub.py" "$S" "$T/port" --lifetime 600 2>"$T/server.err" &
SRV=$!
trap 'kill $SRV 2>/dev/null; rm -rf "$T"' EXIT
wait_until 60 "the loopback server's port file" -- test -s "$T/port"
[ -s "$T/port" ] || { echo "test_baseline_url: the server did not start"; cat "$T/server.err"; exit 1; }
EP="http://127.0.0.1:$(cat "$T/port")"
export HARNESS_BASELINE_CACHE="$T/bcache" HARNESS_NET_BACKOFF_MS=1 HARNESS_NET_RETRIES=1
unset HARNESS_BASELINE_TOKEN HF_TOKEN
n=0; faults() { n=$((n+1)); printf '{"n": %d, %s}\n' "$n" "$1" >"$S/faults.json"; }
faults '"rules": []'
B="$SRC/baselines/gpt2-tiny.cpu.baseline"
SHA="$(sha256sum "$B" | cut -d' ' -f1)"

# ---- push -------------------------------------------------------------------------------------
expect 0 "push" -- "$H" baseline push "$B" "$EP/upload/g.baseline"
cmp -s "$B" "$S/uploads/g.baseline" && pass || fail "the uploaded file is the baseline"
grep -q "pull it with: harness baseline pull $EP/upload/g.baseline --sha256 $SHA" "$T/out" && pass || fail "push prints the sha256 and the pull command"
printf 'not a baseline\n' >"$T/bad.baseline"
expect 2 "push a malformed file" -- "$H" baseline push "$T/bad.baseline" "$EP/upload/bad.baseline"
[ ! -e "$S/uploads/bad.baseline" ] && pass || fail "a malformed baseline is not uploaded"
expect 2 "push without a URL" -- "$H" baseline push "$B"
expect 2 "push to ftp://" -- "$H" baseline push "$B" ftp://x/y; says "not an http"
faults '"token": "up-tok", "rules": []'
expect 2 "push without the token" -- "$H" baseline push "$B" "$EP/upload/t.baseline"; says "HTTP 401"
expect 0 "push with HARNESS_BASELINE_TOKEN" -- env HARNESS_BASELINE_TOKEN=up-tok "$H" baseline push "$B" "$EP/upload/t.baseline"
! grep -q up-tok "$T/out" "$T/err" && pass || fail "the token is printed"
: >"$S/requests.log"
expect 2 "HF_TOKEN is never sent to a baseline server" -- env HF_TOKEN=up-tok "$H" baseline push "$B" "$EP/upload/t.baseline"
grep -q "auth=none" "$S/requests.log" && pass || fail "HF_TOKEN went to the baseline server"
says "HARNESS_BASELINE_TOKEN"; ! grep -q "HF_TOKEN" "$T/err" && pass || fail "a baseline server's 401 names HF_TOKEN: $(cat "$T/err")"
# a long token is sent whole (never cut), a token over the limit refused; HF_TOKEN never read
LONG="$(head -c 600 /dev/zero | tr '\0' t)"; HUGE="$(head -c 5000 /dev/zero | tr '\0' h)"
faults "\"token\": \"$LONG\", \"rules\": []"
expect 0 "push with a 600-byte HARNESS_BASELINE_TOKEN" -- env HARNESS_BASELINE_TOKEN="$LONG" "$H" baseline push "$B" "$EP/upload/long.baseline"
expect 2 "a 5000-byte HARNESS_BASELINE_TOKEN is refused" -- env HARNESS_BASELINE_TOKEN="$HUGE" "$H" baseline push "$B" "$EP/upload/huge.baseline"
says "HARNESS_BASELINE_TOKEN is 5000 bytes long"
! grep -q hhhh "$T/out" "$T/err" && pass || fail "the refused token is printed"
faults '"rules": []'
expect 0 "push with an unused, over-long HF_TOKEN" -- env HF_TOKEN="$HUGE" "$H" baseline push "$B" "$EP/upload/h.baseline"
printf '%s\n' "$HUGE" >"$T/hftoken"
expect 0 "push with an unused, over-long HF_TOKEN_PATH" -- env HF_TOKEN_PATH="$T/hftoken" "$H" baseline push "$B" "$EP/upload/h.baseline"
faults '"rules": []'

# ---- pull ---------------------------------------------------------------------------------------
cp "$B" "$S/files/g.baseline"
expect 2 "pull without --sha256" -- "$H" baseline pull "$EP/files/g.baseline" --db "$T/a.db"; says "--sha256"
expect 2 "pull with a malformed sha256" -- "$H" baseline pull "$EP/files/g.baseline" --sha256 xyz --db "$T/a.db"; says "64 hex"
WRONG="$(printf '%064d' 0)"
expect 2 "pull with a wrong sha256" -- "$H" baseline pull "$EP/files/g.baseline" --sha256 "$WRONG" --db "$T/a.db"; says "refused"
[ ! -e "$T/a.db" ] && [ -z "$(ls "$T/bcache" 2>/dev/null)" ] && pass || fail "a wrong digest imports and keeps nothing"
printf 'not a baseline\n' >"$S/files/junk.baseline"; JSHA="$(sha256sum "$S/files/junk.baseline" | cut -d' ' -f1)"
expect 2 "pull a file that is no baseline (its digest right)" -- "$H" baseline pull "$EP/files/junk.baseline" --sha256 "$JSHA" --db "$T/a.db"
[ ! -e "$T/a.db" ] && [ ! -e "$T/bcache/$JSHA.baseline" ] && pass || fail "a pulled file that does not parse is kept or imported"
expect 2 "pull a missing file" -- "$H" baseline pull "$EP/files/none.baseline" --sha256 "$SHA" --db "$T/a.db"; says "HTTP 404"
expect 2 "pull with an unused, over-long HF_TOKEN reaches the server" -- env HF_TOKEN="$HUGE" "$H" baseline pull "$EP/files/none.baseline" --sha256 "$SHA" --db "$T/a.db"; says "HTTP 404"
faults '"rules": [{"match": "/files/", "fault": "endless"}]'
expect 2 "pull an endless file" -- "$H" baseline pull "$EP/files/g.baseline" --sha256 "$SHA" --db "$T/a.db"; says "more than the"
faults '"rules": [{"match": "/files/", "fault": "status", "code": 500, "times": 1}]'
expect 0 "pull (after a 500)" -- "$H" baseline pull "$EP/files/g.baseline" --sha256 "$SHA" --db "$T/a.db"; says "retry 1 of 1"
grep -q "imported as run" "$T/out" && pass || fail "pull imports the baseline"
[ -f "$T/bcache/$SHA.baseline" ] && pass || fail "the verified file is kept under its digest"
expect 0 "list shows it" -- "$H" baseline list --db "$T/a.db"; grep -q "gpt2-tiny" "$T/out" && pass || fail "the pulled baseline is listed"
rm "$S/files/g.baseline"
expect 0 "pull again from the cache (server has no file)" -- "$H" baseline pull "$EP/files/g.baseline" --sha256 "$SHA" --db "$T/a.db"
echo tampered >>"$T/bcache/$SHA.baseline"
expect 2 "a tampered cache is not trusted" -- "$H" baseline pull "$EP/files/g.baseline" --sha256 "$SHA" --db "$T/b.db"; says "HTTP 404"

# a login in the URL is refused before any request, the password never printed (it was, in every
# message and in push's pull line); a label past 255 bytes is refused (it was cut); a FIFO at the
# cache's file is replaced (the pull hung reading it); a cache that is a file is found before the
# download; a pull whose import is refused keeps nothing; a slow file (below the whole-transfer
# bound of an API answer, above the stall rule's 1 KiB/s) is pulled whole
cp "$B" "$S/files/g.baseline"; : >"$S/requests.log"
for c in "pull http://alice:s3cretpw@127.0.0.1:${EP##*:}/files/g.baseline --sha256 $SHA --db $T/u.db" "push $B http://alice:s3cretpw@127.0.0.1:${EP##*:}/upload/u.baseline"; do
  expect 2 "baseline ${c%% *} with user:password@" -- "$H" baseline $c
  says "user information in a URL is refused"
  if grep -q s3cretpw "$T/err" "$T/out"; then fail "the password was printed"; else pass; fi
done
[ ! -s "$S/requests.log" ] && [ ! -e "$T/u.db" ] && pass || fail "a URL with a login reached the server or the store"
expect 2 "pull --label of 300 bytes" -- "$H" baseline pull "$EP/files/g.baseline" --sha256 "$SHA" --label "$(printf 'a%.0s' $(seq 300))" --db "$T/u.db"
says "label of 300 bytes: at most 255"
rm -rf "$T/fc"; mkdir -p "$T/fc"; mkfifo "$T/fc/$SHA.baseline"
expect 0 "pull with a FIFO at the cache's file" -- env HARNESS_BASELINE_CACHE="$T/fc" timeout $((60 * SLOW)) "$H" baseline pull "$EP/files/g.baseline" --sha256 "$SHA" --db "$T/fifo.db"
[ -f "$T/fc/$SHA.baseline" ] && [ ! -p "$T/fc/$SHA.baseline" ] && pass || fail "the FIFO was not replaced by the file"
: >"$T/cfile"; : >"$S/requests.log"
expect 2 "a cache that is a file" -- env HARNESS_BASELINE_CACHE="$T/cfile" "$H" baseline pull "$EP/files/g.baseline" --sha256 "$SHA" --db "$T/cf.db"
says "is not a folder"; [ ! -s "$S/requests.log" ] && pass || fail "the cache was found a file only after the download"
sed 's/^host: .*/host: other/' "$B" >"$S/files/g2.baseline"; S2="$(sha256sum "$S/files/g2.baseline" | cut -d' ' -f1)"
rm -rf "$T/kc"
expect 0 "pull the baseline" -- env HARNESS_BASELINE_CACHE="$T/kc" "$H" baseline pull "$EP/files/g.baseline" --sha256 "$SHA" --db "$T/k.db"
expect 2 "pull another content under its label" -- env HARNESS_BASELINE_CACHE="$T/kc" "$H" baseline pull "$EP/files/g2.baseline" --sha256 "$S2" --db "$T/k.db"
says "the download is not kept"; [ ! -e "$T/kc/$S2.baseline" ] && pass || fail "a refused import kept its download"
faults '"rules": [{"match": "/files/g.baseline", "fault": "slow", "pause": 0.4}]'
rm -rf "$T/sc"
expect 0 "pull a file slower than an API answer's bound (6 s)" -- env HF_HUB_ETAG_TIMEOUT=1 HARNESS_BASELINE_CACHE="$T/sc" "$H" baseline pull "$EP/files/g.baseline" --sha256 "$SHA" --db "$T/slow.db"
faults '"rules": []'

# ---- a scenario whose baseline is a URL ---------------------------------------------------------
cp "$B" "$S/files/g.baseline"; rm -rf "$T/bcache"
ln -s "$SRC/scenarios/data" "$T/data"
"$PY" - "$SRC/scenarios/gpt2-tiny.json" "$T/url.json" "$EP/files/g.baseline" "$SHA" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
s["baseline"] = {"url": sys.argv[3], "sha256": sys.argv[4]}
json.dump(s, open(sys.argv[2], "w"), indent=1)
EOF
expect 0 "run --compare against the scenario's baseline URL" -- "$H" run "$T/url.json" --compare --db "$T/c.db"
grep -q "pass" "$T/out" && pass || fail "the run passes against the pulled baseline"
"$PY" - "$T/url.json" "$T/badurl.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1])); s["baseline"]["sha256"] = "abc"
json.dump(s, open(sys.argv[2], "w"))
EOF
expect 2 "a scenario with a malformed baseline sha256" -- "$H" run "$T/badurl.json" --db "$T/d.db"; says "baseline.sha256"
[ ! -e "$T/d.db" ] && pass || fail "nothing recorded for a malformed scenario"
# a well-formed digest the file does not have, or a URL that answers 404: refused by the matrix's
# check, before anything trains (the run was trained and recorded first)
"$PY" - "$T/url.json" "$T/wrongurl.json" "$WRONG" "$EP/files/none.baseline" "$T/goneurl.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1])); s["baseline"]["sha256"] = sys.argv[3]
json.dump(s, open(sys.argv[2], "w"))
s = json.load(open(sys.argv[1])); s["baseline"]["url"] = sys.argv[4]
json.dump(s, open(sys.argv[5], "w"))
EOF
rm -rf "$T/bcache"
expect 2 "run --compare, a baseline URL of another digest" -- "$H" run "$T/wrongurl.json" --compare --db "$T/w.db"
says "refused"
[ ! -e "$T/w.db" ] && pass || fail "a run was recorded before its baseline URL was refused"
expect 2 "run --compare, a baseline URL that is not there" -- "$H" run "$T/goneurl.json" --compare --db "$T/w.db"
says "HTTP 404"
[ ! -e "$T/w.db" ] && pass || fail "a run was recorded before its missing baseline URL was refused"
finish
