#!/usr/bin/env bash
# tests/test_fetch.sh: `harness fetch` against a fake hub on loopback (tools/fake_hub.py): the cache
# layout, a pinned commit, a run on model.repo offline, resume (and a 416 or another part: start
# over), retries, two fetches at once (huggingface_hub's blob lock), every failure (exit 2, nothing
# partial in place), hostile names, the token, and huggingface_hub reading our cache and we its.
# usage: test_fetch.sh HARNESS_EXE SOURCE_DIR (needs HARNESS_PYTHON or BUILD/venv: skipped without)
set -u
H="$1"; SRC="$(cd "$2" && pwd)"
. "$(dirname "$0")/lib.sh"
PY="${HARNESS_PYTHON:-$(cd "$(dirname "$H")" && pwd)/venv/bin/python}"
if ! "$PY" -c 'import http.server' 2>/dev/null; then
  echo "test_fetch: skipped: no Python at $PY for the loopback hub (set HARNESS_PYTHON)"
  exit 77
fi

# ---- the fake hub -------------------------------------------------------------------------------
S="$T/srv"; mkdir -p "$S/hub/models/org" "$S/hub/datasets/org"
"$PY" "$SRC/tools/fake_hub.py" "$S" "$T/port" --lifetime 900 2>"$T/server.err" &
SRV=$!
trap 'kill $SRV 2>/dev/null; rm -rf "$T"' EXIT
wait_until 60 "the loopback server's port file" -- test -s "$T/port"
[ -s "$T/port" ] || { echo "test_fetch: the fake hub did not start:"; cat "$T/server.err"; exit 1; }
EP="http://127.0.0.1:$(cat "$T/port")"
export HF_ENDPOINT="$EP" HF_HOME="$T/hfhome" HARNESS_NET_BACKOFF_MS=1 HARNESS_NET_RETRIES=2
export HF_HUB_DOWNLOAD_TIMEOUT=2 HF_HUB_ETAG_TIMEOUT=5
unset HF_TOKEN HUGGING_FACE_HUB_TOKEN HF_TOKEN_PATH HF_HUB_OFFLINE HF_HUB_CACHE HUGGINGFACE_HUB_CACHE
n_faults=0
faults() { n_faults=$((n_faults+1)); printf '{"n": %d, %s}\n' "$n_faults" "$1" >"$S/faults.json"; }
nofaults() { faults '"rules": []'; }
nofaults
# no partial file anywhere in cache $1, and no link to a missing blob
clean_cache() {
  local left; left="$(find "$1" -name '*.incomplete' -o -name '*.tmp' 2>/dev/null)"
  [ -z "$left" ] && pass || fail "$2: partial files left: $left"
  left="$(find "$1" -xtype l 2>/dev/null)"
  [ -z "$left" ] && pass || fail "$2: dangling links: $left"
}

# the repo: gpt2-tiny's initial weights as a model directory, a nested file and an empty one
tiny="$SRC/scenarios/gpt2-tiny.json"
corpus="$SRC/scenarios/data/corpus.txt"
R="$S/hub/models/org/tiny"
"$H" init "$tiny" "$R" >/dev/null || { echo "test_fetch: harness init failed"; exit 1; }
mkdir -p "$R/extra/deep"; echo "nested" >"$R/extra/deep/note.txt"; : >"$R/empty.txt"

# ---- a whole fetch: huggingface_hub's layout ------------------------------------------------------
C="$T/cache"
expect 0 "fetch --help" -- "$H" fetch --help; grep -q HF_HUB_OFFLINE "$T/out" && pass || fail "--help names HF_HUB_OFFLINE"
expect 2 "fetch without a repo" -- "$H" fetch
expect 2 "fetch a bad repo id" -- "$H" fetch '../etc' --cache "$C"; says "not a repository id"
expect 2 "fetch a bad revision" -- "$H" fetch 'org/tiny@../x' --cache "$C"; says "not a revision"
expect 2 "fetch an ftp endpoint" -- "$H" fetch org/tiny --cache "$C" --endpoint ftp://x; says "not an http"
# a cache that is a file is refused before the network (it went to the server first)
expect 2 "fetch --cache a file" -- "$H" fetch org/tiny --cache /dev/null --endpoint http://127.0.0.1:1; says "the cache /dev/null (--cache) is not a folder"
expect 2 "fetch with HF_HUB_CACHE a file" -- env HF_HUB_CACHE=/dev/null "$H" fetch org/tiny --endpoint http://127.0.0.1:1; says "the cache /dev/null (HF_HUB_CACHE, HF_HOME or the default) is not a folder"
expect 0 "fetch org/tiny" -- "$H" fetch org/tiny --cache "$C"
snap="$(cat "$T/out")"; commit="$(basename "$snap")"; RD="$C/models--org--tiny"
[ "$snap" = "$RD/snapshots/$commit" ] && pass || fail "stdout is the snapshot folder: $snap"
[ "$(cat "$RD/refs/main")" = "$commit" ] && pass || fail "refs/main holds the commit"
[ "$(wc -c <"$RD/refs/main")" = 40 ] && pass || fail "refs/main is the bare commit (no newline), as huggingface_hub writes it"
st_sha="$(sha256sum "$R/model.safetensors" | cut -d' ' -f1)"
[ "$(readlink "$snap/model.safetensors")" = "../../blobs/$st_sha" ] && pass || fail "the LFS file links to blobs/SHA256: $(readlink "$snap/model.safetensors")"
git_id() { "$PY" -c 'import hashlib,sys; d=open(sys.argv[1],"rb").read(); print(hashlib.sha1(b"blob %d\0" % len(d) + d).hexdigest())' "$1"; }
[ "$(readlink "$snap/extra/deep/note.txt")" = "../../../../blobs/$(git_id "$R/extra/deep/note.txt")" ] && pass || fail "a nested file links relatively to blobs/GIT_ID: $(readlink "$snap/extra/deep/note.txt")"
for f in config.json model.safetensors extra/deep/note.txt empty.txt; do
  cmp -s "$R/$f" "$snap/$f" && pass || fail "$f differs from the hub's"
done
clean_cache "$C" "whole fetch"
expect 0 "fetch again" -- "$H" fetch org/tiny --cache "$C"; says "0 downloaded"
expect 0 "fetch by the commit" -- "$H" fetch "org/tiny@$commit" --cache "$C"; says "0 downloaded"
# a pinned commit is the commit served, or nothing is written; any case, stored in lower case
other="0123456789abcdef0123456789abcdef01234567"
expect 2 "a pinned commit the server does not answer with" -- "$H" fetch "org/tiny@$other" --cache "$T/c-pin"
says "answers with commit $commit, not the commit $other asked for"
[ ! -e "$T/c-pin" ] && pass || fail "a refused pin writes nothing: $(find "$T/c-pin")"
UPPER="$(printf %s "$commit" | tr a-f A-F)"
expect 0 "a pinned commit in upper case" -- "$H" fetch "org/tiny@$UPPER" --cache "$T/c-pin"
[ "$(cat "$T/out")" = "$T/c-pin/models--org--tiny/snapshots/$commit" ] && pass || fail "an upper-case pin gives the lower-case snapshot: $(cat "$T/out")"
[ ! -e "$T/c-pin/models--org--tiny/refs" ] && pass || fail "no refs/ entry for a commit: $(ls "$T/c-pin/models--org--tiny/refs")"
expect 0 "offline, a pinned commit in upper case" -- env HF_HUB_OFFLINE=1 "$H" fetch "org/tiny@$UPPER" --cache "$T/c-pin"
[ "$(cat "$T/out")" = "$T/c-pin/models--org--tiny/snapshots/$commit" ] && pass || fail "offline, an upper-case pin finds the snapshot: $(cat "$T/out")"
HF_HUB_CACHE="$C" expect 0 "fetch from HF_HUB_CACHE" -- env HF_HUB_CACHE="$C" "$H" fetch org/tiny
[ "$(cat "$T/out")" = "$snap" ] && pass || fail "HF_HUB_CACHE is the default cache"
expect 0 "fetch into \$HF_HOME/hub" -- "$H" fetch org/tiny --quiet
[ -L "$T/hfhome/hub/models--org--tiny/snapshots/$commit/config.json" ] && pass || fail "\$HF_HOME/hub is the cache without HF_HUB_CACHE"
expect 0 "--include *.json" -- "$H" fetch org/tiny --cache "$T/c-inc" --include '*.json'
[ -L "$T/c-inc/models--org--tiny/snapshots/$commit/config.json" ] && [ ! -e "$T/c-inc/models--org--tiny/snapshots/$commit/model.safetensors" ] && pass || fail "--include fetched only the json files"
expect 0 "--include twice: the globs add up" -- "$H" fetch org/tiny --cache "$T/c-inc2" --include config.json --include 'model.safe*'
[ -L "$T/c-inc2/models--org--tiny/snapshots/$commit/config.json" ] && [ -L "$T/c-inc2/models--org--tiny/snapshots/$commit/model.safetensors" ] && pass || fail "a second --include replaced the first"

# ---- offline: HF_HUB_OFFLINE and a scenario's model.repo ----------------------------------------
expect 0 "HF_HUB_OFFLINE fetch from the cache" -- env HF_HUB_OFFLINE=1 HF_ENDPOINT=http://127.0.0.1:9 "$H" fetch org/tiny --cache "$C"
[ "$(cat "$T/out")" = "$snap" ] && pass || fail "offline fetch prints the snapshot"
expect 0 "HF_HUB_OFFLINE=tRue, as huggingface_hub reads it" -- env HF_HUB_OFFLINE=tRue HF_ENDPOINT=http://127.0.0.1:9 "$H" fetch org/tiny --cache "$C"
expect 2 "HF_HUB_OFFLINE fetch of a repo not cached" -- env HF_HUB_OFFLINE=1 "$H" fetch org/absent --cache "$C"
says "org/absent@main is not in the cache $C"
scenario() { # NAME MODEL_KEYS
  cat >"$T/$1.json" <<EOF
{"name": "$1", "model": {"family": "gpt2", $2},
 "data": {"path": "$corpus", "tokenizer": "byte", "seq_len": 64},
 "train": {"steps": 3, "batch_size": 8, "lr": 3e-3, "warmup_steps": 5, "schedule": "cosine",
           "weight_decay": 0.1, "decay_all": true, "seed": 123}}
EOF
}
losses() { grep '^step ' "$1" | awk '{print $4}'; }
scenario repo '"repo": "org/tiny@main"'
scenario dir "\"path\": \"$R\""
expect 0 "run on model.repo, offline" -- env HF_HUB_OFFLINE=1 HF_HUB_CACHE="$C" HF_ENDPOINT=http://127.0.0.1:9 "$H" run "$T/repo.json" --db "$T/r.db"
losses "$T/out" >"$T/l-repo"
expect 0 "run on the same model as a directory" -- "$H" run "$T/dir.json" --db "$T/d.db"
losses "$T/out" >"$T/l-dir"
[ -s "$T/l-repo" ] && cmp -s "$T/l-repo" "$T/l-dir" && pass || fail "model.repo trains as model.path does"
scenario absent '"repo": "org/absent@v1"'
expect 2 "run on a repo not in the cache" -- env HF_HUB_CACHE="$C" "$H" run "$T/absent.json" --db "$T/none.db"
says "org/absent@v1 is not in the cache $C"
[ ! -e "$T/none.db" ] && pass || fail "a missing model.repo records nothing (no store created)"
scenario badrepo '"repo": "a/b/c"'
expect 2 "model.repo malformed" -- env HF_HUB_CACHE="$C" "$H" run "$T/badrepo.json" --db "$T/none.db"; says "model.repo"
scenario both "\"repo\": \"org/tiny\", \"path\": \"$R\""
expect 2 "model.repo and model.path" -- env HF_HUB_CACHE="$C" "$H" run "$T/both.json" --db "$T/none.db"; says "not both"

# ---- datasets ---------------------------------------------------------------------------------
mkdir -p "$S/hub/datasets/org/ds"; cp "$corpus" "$S/hub/datasets/org/ds/train.txt"
expect 0 "fetch datasets/org/ds" -- "$H" fetch datasets/org/ds --cache "$C"
cmp -s "$corpus" "$(cat "$T/out")/train.txt" && [ -d "$C/datasets--org--ds/blobs" ] && pass || fail "a dataset goes to datasets--org--ds"
expect 0 "fetch --dataset org/ds" -- "$H" fetch org/ds --dataset --cache "$C"

# ---- resume and retries ----------------------------------------------------------------------
: >"$S/requests.log"
faults '"rules": [{"match": "/cdn/", "method": "GET", "fault": "cut", "times": 1}]'
expect 0 "a cut connection is resumed" -- "$H" fetch org/tiny --cache "$T/c-cut"
grep -q "^GET /cdn/.* range=bytes=[1-9][0-9]*- " "$S/requests.log" && pass || fail "the retry asked for the rest with Range"
cmp -s "$R/model.safetensors" "$T/c-cut/models--org--tiny/snapshots/$commit/model.safetensors" && pass || fail "the resumed file is whole"
clean_cache "$T/c-cut" "resume"
faults '"rules": [{"match": "/cdn/", "method": "GET", "fault": "cut", "times": 1}]'
expect 2 "a cut without retries" -- env HARNESS_NET_RETRIES=0 "$H" fetch org/tiny --cache "$T/c-cut2"; says "model.safetensors"
ls "$T/c-cut2/models--org--tiny/blobs/"*.incomplete >/dev/null 2>&1 && pass || fail "the partial download is kept as blobs/ETAG.incomplete"
[ ! -e "$T/c-cut2/models--org--tiny/snapshots/$commit/model.safetensors" ] && [ ! -e "$T/c-cut2/models--org--tiny/refs/main" ] && pass || fail "no partial file in place and no ref after a failure"
: >"$S/requests.log"; nofaults
expect 0 "the next fetch resumes" -- "$H" fetch org/tiny --cache "$T/c-cut2"
grep -q "^GET /cdn/.* range=bytes=[1-9][0-9]*- " "$S/requests.log" && pass || fail "the next fetch asked with Range"
cmp -s "$R/model.safetensors" "$T/c-cut2/models--org--tiny/snapshots/$commit/model.safetensors" && pass || fail "the resumed file is whole (next fetch)"
faults '"rules": [{"match": "/cdn/", "method": "GET", "fault": "cut", "times": 1}]'
expect 2 "a cut again" -- env HARNESS_NET_RETRIES=0 "$H" fetch org/tiny --cache "$T/c-cut3"
faults '"rules": [{"match": "/cdn/", "method": "GET", "fault": "ignore_range"}]'
expect 0 "a server ignoring Range: start over" -- "$H" fetch org/tiny --cache "$T/c-cut3"
cmp -s "$R/model.safetensors" "$T/c-cut3/models--org--tiny/snapshots/$commit/model.safetensors" && pass || fail "whole after a 200 to a Range"
faults '"rules": [{"match": "/api/", "fault": "status", "code": 500, "times": 2}]'
expect 0 "500 twice, then success" -- "$H" fetch org/tiny --cache "$T/c-500"; says "retry 2 of 2"
faults '"rules": [{"match": "/resolve/", "fault": "status", "code": 429, "times": 1}]'
expect 0 "429 once, then success" -- "$H" fetch org/tiny --cache "$T/c-429"; says "HTTP 429"
faults '"rules": [{"match": "/cdn/", "fault": "status", "code": 503}]'
expect 2 "503 for ever" -- "$H" fetch org/tiny --cache "$T/c-503"; says "gave up after the retries"
clean_cache "$T/c-503" "503"

# ---- a resume answered with a 416, or with a 206 from another offset: start over, same run ----
# partial FOLDER: leaves blobs/ETAG.incomplete of model.safetensors there (a cut, no retry)
partial() {
  faults '"rules": [{"match": "/cdn/", "method": "GET", "fault": "cut", "times": 1}]'
  expect 2 "a cut (leaves a partial file)" -- env HARNESS_NET_RETRIES=0 "$H" fetch org/tiny --cache "$1"
  ls "$1/models--org--tiny/blobs/"*.incomplete >/dev/null 2>&1 && pass || fail "$1: no partial file to resume"
  : >"$S/requests.log"
}
# restarted FOLDER WHAT: the last GET of the CDN asked for the whole file and the file is whole
restarted() {
  grep "^GET /cdn/" "$S/requests.log" | head -1 | grep -q "range=bytes=[1-9][0-9]*- " && pass || fail "$2: the first GET resumes with Range"
  grep "^GET /cdn/" "$S/requests.log" | tail -1 | grep -q "range=- " && pass || fail "$2: then the whole file is asked for: $(grep "^GET /cdn/" "$S/requests.log")"
  cmp -s "$R/model.safetensors" "$1/models--org--tiny/snapshots/$commit/model.safetensors" && pass || fail "$2: the file is whole"
  clean_cache "$1" "$2"
}
partial "$T/c-416"
faults '"rules": [{"match": "/cdn/", "method": "GET", "fault": "status", "code": 416, "times": 1}]'
expect 0 "a 416 to a resume starts over (no retry needed)" -- env HARNESS_NET_RETRIES=0 "$H" fetch org/tiny --cache "$T/c-416"; says "starting over"
restarted "$T/c-416" "416"
for shift in 16 -16; do
  partial "$T/c-cr$shift"
  faults "\"rules\": [{\"match\": \"/cdn/\", \"method\": \"GET\", \"fault\": \"shift_range\", \"shift\": $shift, \"times\": 1}]"
  expect 0 "a 206 whose Content-Range starts $shift bytes off starts over" -- env HARNESS_NET_RETRIES=0 "$H" fetch org/tiny --cache "$T/c-cr$shift"; says "Content-Range"
  restarted "$T/c-cr$shift" "Content-Range $shift"
done

# ---- two fetches of one file into one cache: a lock per blob, where huggingface_hub takes it ----
: >"$S/requests.log"
faults '"rules": [{"match": "/cdn/", "method": "GET", "fault": "slow", "pause": 0.1}]'
"$H" fetch org/tiny --cache "$T/c-two" >"$T/out1" 2>"$T/err1" & P1=$!
"$H" fetch org/tiny --cache "$T/c-two" >"$T/out2" 2>"$T/err2" & P2=$!
wait $P1; r1=$?; wait $P2; r2=$?
[ "$r1$r2" = 00 ] && pass || { fail "two fetches at once: exit $r1 and $r2"; cat "$T/err1" "$T/err2" | grep -v '^\[info' | head; }
[ "$(grep -c '^GET /cdn/' "$S/requests.log")" = 1 ] && pass || fail "two fetches at once download the file once: $(grep '^GET /cdn/' "$S/requests.log")"
cmp -s "$R/model.safetensors" "$T/c-two/models--org--tiny/snapshots/$commit/model.safetensors" && pass || fail "the file is whole after two fetches at once"
[ -f "$T/c-two/.locks/models--org--tiny/$st_sha.lock" ] && pass || fail "the lock is .locks/models--org--tiny/SHA256.lock, as huggingface_hub names it"
clean_cache "$T/c-two" "two fetches at once"
# a lock held by another process (flock, as huggingface_hub's filelock takes it) is waited for;
# when its holder dies the kernel releases it and the fetch goes on
nofaults
L="$T/c-held/.locks/models--org--tiny"; mkdir -p "$L"
"$PY" -c 'import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o664); fcntl.flock(fd, fcntl.LOCK_EX)
open(sys.argv[2], "w").write("held"); time.sleep(300)' "$L/$st_sha.lock" "$T/held" & HOLDER=$!
wait_until 30 "the lock holder" -- test -s "$T/held"
"$H" fetch org/tiny --cache "$T/c-held" >"$T/out3" 2>"$T/err3" & P3=$!
wait_until 60 "the fetch's note that it waits for the lock" -- grep -q "waiting for" "$T/err3"
[ ! -e "$T/c-held/models--org--tiny/snapshots/$commit/model.safetensors" ] && pass || fail "the fetch went on while another process held the lock"
kill -9 $HOLDER; wait $HOLDER 2>/dev/null
wait $P3; r3=$?
[ "$r3" = 0 ] && pass || { fail "the fetch after the lock holder died: exit $r3"; head -5 "$T/err3"; }
cmp -s "$R/model.safetensors" "$T/c-held/models--org--tiny/snapshots/$commit/model.safetensors" && pass || fail "the file is whole after the lock holder died"

# ---- failures: exit 2, a clear message, nothing partial in place ------------------------------
nofaults
expect 2 "no such repository (404)" -- "$H" fetch org/nope --cache "$T/c-404"; says "HTTP 404"
faults '"rules": [{"match": "config.json", "fault": "status", "code": 404}]'
expect 2 "a file 404" -- "$H" fetch org/tiny --cache "$T/c-404"; says "no such repository, revision or file"
faults '"rules": [{"match": "model.safetensors", "fault": "badsha"}]'
expect 2 "a wrong sha256" -- "$H" fetch org/tiny --cache "$T/c-sha"; says "refused, nothing kept"
[ -z "$(ls "$T/c-sha/models--org--tiny/blobs" | grep -v '^[0-9a-f]\{40\}$')" ] && pass || fail "no blob of the refused file: $(ls "$T/c-sha/models--org--tiny/blobs")"
clean_cache "$T/c-sha" "wrong sha256"
faults '"rules": [{"match": "/cdn/", "fault": "drip"}]'
expect 2 "a slow drip" -- env HF_HUB_DOWNLOAD_TIMEOUT=1 HARNESS_NET_RETRIES=0 "$H" fetch org/tiny --cache "$T/c-drip"; says "too slow"
[ ! -e "$T/c-drip/models--org--tiny/snapshots/$commit/model.safetensors" ] && pass || fail "nothing in place after a stall"
faults '"rules": [{"match": "/cdn/", "method": "GET", "fault": "endless"}]'
expect 2 "an endless file" -- "$H" fetch org/tiny --cache "$T/c-end"; says "more than the"
clean_cache "$T/c-end" "endless file"
faults '"rules": [{"match": "/api/", "fault": "endless"}]'
expect 2 "an endless API answer" -- "$H" fetch org/tiny --cache "$T/c-end2"; says "more than the"
faults '"rules": [{"match": "/resolve/", "fault": "bigheaders"}]'
expect 2 "oversized headers" -- "$H" fetch org/tiny --cache "$T/c-hdr"; says "headers exceed"
faults '"rules": [{"match": "/cdn/", "fault": "redirect_loop"}]'
expect 2 "a redirect loop" -- "$H" fetch org/tiny --cache "$T/c-loop"; says "redirect"
faults '"rules": [{"match": "/cdn/", "fault": "redirect_scheme"}]'
expect 2 "a redirect to file://" -- "$H" fetch org/tiny --cache "$T/c-scheme"; says "file"
faults '"rules": [{"match": "config.json", "fault": "badetag"}]'
expect 2 "an ETag that is a path" -- "$H" fetch org/tiny --cache "$T/c-etag"; says "is not a digest"
[ ! -e "$T/c-etag/x" ] && [ ! -e "$T/x" ] && pass || fail "nothing written outside the cache"
nofaults
expect 2 "an endpoint that does not answer" -- env HARNESS_NET_RETRIES=0 "$H" fetch org/tiny --cache "$T/c-down" --endpoint http://127.0.0.1:9; says "127.0.0.1:9"

# ---- hostile file names ---------------------------------------------------------------------
hostile() { # NAME SIBLINGS_JSON WHAT
  mkdir -p "$S/hub/models/org/$1"; echo x >"$S/hub/models/org/$1/ok.txt"
  printf '%s' "$2" >"$S/hub/models/org/$1/.siblings.json"
  expect 2 "$3" -- "$H" fetch "org/$1" --cache "$T/c-host"; says "refused"
}
hostile up '["ok.txt", "../x"]' "a name with .."
hostile abs '["/tmp/abs"]' "an absolute name"
hostile mid '["a/../../x"]' "a name going up in the middle"
hostile dot '["./ok.txt"]' "a name with ."
hostile ctl '["a\u001bb"]' "a name with a control byte"
hostile dirfile '["ok.txt", "ok.txt/b"]' "a file that is also a folder"
# a name part longer than a folder holds (NAME_MAX 255) was downloaded, then failed to link
hostile long "[\"ok.txt\", \"$(printf 'x%.0s' $(seq 300))\"]" "a name part of 300 bytes"
[ ! -e "$T/x" ] && [ ! -e /tmp/abs ] && pass || fail "hostile names wrote outside the cache"
[ -z "$(ls "$T/c-host" 2>/dev/null)" ] && pass || fail "hostile names are refused before anything is written"
# a symlink planted in the cache where a snapshot folder goes is never followed
mkdir -p "$T/outside" "$T/c-sym/models--org--tiny/snapshots/$commit"
ln -s "$T/outside" "$T/c-sym/models--org--tiny/snapshots/$commit/extra"
expect 2 "a planted symlink" -- "$H" fetch org/tiny --cache "$T/c-sym"; says "not a folder"
[ -z "$(ls "$T/outside")" ] && pass || fail "nothing written through the planted symlink"

# ---- the token: sent as a bearer, never printed or stored ------------------------------------
faults '"token": "s3cr3t-tok", "rules": []'
expect 2 "401 without a token" -- "$H" fetch org/tiny --cache "$T/c-tok"; says "HTTP 401"; says "HF_TOKEN"
: >"$S/requests.log"
expect 0 "HF_TOKEN" -- env HF_TOKEN=s3cr3t-tok "$H" fetch org/tiny --cache "$T/c-tok"
grep -v "^GET /cdn/" "$S/requests.log" | grep -q "auth=yes" && ! grep -v "^GET /cdn/" "$S/requests.log" | grep -q "auth=no" && pass || fail "every request to the hub carried the bearer token"
grep "^GET /cdn/" "$S/requests.log" | grep -q . && ! grep "^GET /cdn/" "$S/requests.log" | grep -qv "auth=none" && pass || fail "the token is not sent to the CDN's other host"
! grep -q s3cr3t "$T/out" "$T/err" && ! grep -rq s3cr3t "$T/c-tok" && pass || fail "the token is printed or stored"
mkdir -p "$T/hfhome"; printf 's3cr3t-tok\n' >"$T/hfhome/token"
expect 0 "the token file \$HF_HOME/token" -- "$H" fetch org/tiny --cache "$T/c-tok2"
rm "$T/hfhome/token"
expect 2 "a wrong token" -- env HF_TOKEN=wrong "$H" fetch org/tiny --cache "$T/c-tok3"; says "HTTP 401"
! grep -q wrong "$T/err" && pass || fail "a wrong token is printed"
# cleaned as huggingface_hub cleans it: CR/LF dropped and blanks stripped (never sent into the
# header, where they ended it or added lines); a control byte left is refused, not printed
expect 0 "HF_TOKEN with blanks and a CRLF" -- env HF_TOKEN=$' s3cr3t-tok\r\n' "$H" fetch org/tiny --cache "$T/c-tok4"
printf '  s3cr3t-tok \n' >"$T/hfhome/token"
expect 0 "a token file with blanks" -- "$H" fetch org/tiny --cache "$T/c-tok5"
rm "$T/hfhome/token"
expect 2 "a control byte in HF_TOKEN" -- env HF_TOKEN=$'s3cr3t\x01tok' "$H" fetch org/tiny --cache "$T/c-tok6"
says "the token from HF_TOKEN holds a control character"
! grep -q s3cr3t "$T/err" && pass || fail "the refused token is printed"
# a token path that is there but no regular file is refused, never a fetch without the token
mkdir -p "$T/tokdir"; mkfifo "$T/tokfifo"
expect 2 "a token path that is a folder" -- env HF_TOKEN_PATH="$T/tokdir" "$H" fetch org/tiny --cache "$T/c-tok7"; says "is a directory"
expect 2 "a token path that is a FIFO" -- env HF_TOKEN_PATH="$T/tokfifo" timeout 60 "$H" fetch org/tiny --cache "$T/c-tok7"; says "FIFO"
[ ! -e "$T/c-tok7" ] && pass || fail "a refused token path left a cache"
nofaults

# ---- https: the whole fetch, and a redirect down to http refused ------------------------------
if openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
     -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" -keyout "$T/key.pem" -out "$T/cert.pem" 2>/dev/null; then
  "$PY" "$SRC/tools/fake_hub.py" "$S" "$T/tport" --lifetime 300 --tls "$T/cert.pem" "$T/key.pem" 2>"$T/tserver.err" &
  TSRV=$!
  trap 'kill $SRV $TSRV 2>/dev/null; rm -rf "$T"' EXIT
  wait_until 60 "the second loopback server's port file" -- test -s "$T/tport"
  TEP="https://127.0.0.1:$(cat "$T/tport")"
  expect 2 "https with an unknown certificate authority" -- "$H" fetch org/tiny --cache "$T/c-tls0" --endpoint "$TEP"; says "certificate"
  expect 0 "https (CURL_CA_BUNDLE)" -- env CURL_CA_BUNDLE="$T/cert.pem" "$H" fetch org/tiny --cache "$T/c-tls" --endpoint "$TEP"
  cmp -s "$R/model.safetensors" "$T/c-tls/models--org--tiny/snapshots/$commit/model.safetensors" && pass || fail "the file over https"
  faults '"rules": [{"match": "/cdn/", "fault": "redirect_http"}]'
  expect 2 "a redirect from https to http" -- env CURL_CA_BUNDLE="$T/cert.pem" "$H" fetch org/tiny --cache "$T/c-tls2" --endpoint "$TEP"; says 'Protocol "http" not supported'
  [ ! -e "$T/c-tls2/models--org--tiny/snapshots/$commit/model.safetensors" ] && pass || fail "nothing in place after a refused redirect"
  nofaults
else
  echo "  (no openssl to make a certificate: the https cases skipped)"
fi

# ---- huggingface_hub reads our cache; we read its -------------------------------------------
if "$PY" -c 'import huggingface_hub' 2>/dev/null; then
  cat >"$T/hf_offline.py" <<'EOF'
import sys
from huggingface_hub import hf_hub_download, snapshot_download
cache, src = sys.argv[1], sys.argv[2]
snap = snapshot_download("org/tiny", cache_dir=cache, local_files_only=True)
path = hf_hub_download("org/tiny", "model.safetensors", cache_dir=cache, local_files_only=True)
assert open(path, "rb").read() == open(src + "/model.safetensors", "rb").read(), "bytes differ"
nested = hf_hub_download("org/tiny", "extra/deep/note.txt", cache_dir=cache, local_files_only=True)
assert open(nested).read() == "nested\n"
try:
    from transformers import AutoConfig
    cfg = AutoConfig.from_pretrained("org/tiny", cache_dir=cache, local_files_only=True)
    print("transformers config", cfg.model_type, cfg.n_layer)
except ImportError:
    pass
print(snap)
EOF
  expect 0 "huggingface_hub finds the harness's files offline" -- env HF_HUB_OFFLINE=1 "$PY" "$T/hf_offline.py" "$C" "$R"
  [ "$(tail -1 "$T/out")" = "$snap" ] && pass || fail "huggingface_hub resolves the same snapshot: $(tail -1 "$T/out")"
  grep -q "transformers config gpt2 2" "$T/out" && pass || echo "  (transformers not importable: config check skipped)"
  expect 0 "huggingface_hub downloads from the fake hub" -- env HF_HUB_CACHE="$T/c-py" HF_HUB_DISABLE_XET=1 "$PY" -c 'from huggingface_hub import snapshot_download; print(snapshot_download("org/tiny"))'
  expect 0 "the harness finds huggingface_hub's files offline" -- env HF_HUB_OFFLINE=1 "$H" fetch org/tiny --cache "$T/c-py"
  [ "$(cat "$T/out")" = "$T/c-py/models--org--tiny/snapshots/$commit" ] && pass || fail "the same snapshot from huggingface_hub's cache"
  for f in config.json model.safetensors extra/deep/note.txt empty.txt; do
    [ "$(readlink "$T/c-py/models--org--tiny/snapshots/$commit/$f")" = "$(readlink "$snap/$f")" ] && pass || fail "$f: huggingface_hub links $(readlink "$T/c-py/models--org--tiny/snapshots/$commit/$f"), the harness $(readlink "$snap/$f")"
  done
  cmp -s "$T/c-py/models--org--tiny/refs/main" "$RD/refs/main" && pass || fail "refs/main the same"
  # huggingface_hub waits for the harness's lock on a blob, then finds the blob complete
  : >"$S/requests.log"
  faults '"rules": [{"match": "/cdn/", "method": "GET", "fault": "slow", "pause": 0.2}]'
  "$H" fetch org/tiny --cache "$T/c-mix" >"$T/out4" 2>"$T/err4" & P4=$!
  wait_until 60 "the harness's partial download" -- sh -c "ls '$T/c-mix/models--org--tiny/blobs/'*.incomplete >/dev/null 2>&1"
  expect 0 "huggingface_hub while the harness downloads the file" -- env HF_HUB_CACHE="$T/c-mix" HF_HUB_DISABLE_XET=1 "$PY" -c 'from huggingface_hub import snapshot_download; print(snapshot_download("org/tiny"))'
  wait $P4; r4=$?
  [ "$r4" = 0 ] && pass || { fail "the harness beside huggingface_hub: exit $r4"; head -5 "$T/err4"; }
  [ "$(grep -c '^GET /cdn/' "$S/requests.log")" = 1 ] && pass || fail "huggingface_hub waited for the harness's lock: $(grep '^GET /cdn/' "$S/requests.log")"
  cmp -s "$R/model.safetensors" "$T/c-mix/models--org--tiny/snapshots/$commit/model.safetensors" && pass || fail "the file is whole after both tools at once"
  nofaults
  expect 0 "run on model.repo from huggingface_hub's cache" -- env HF_HUB_OFFLINE=1 HF_HUB_CACHE="$T/c-py" "$H" run "$T/repo.json" --db "$T/p.db"
  losses "$T/out" >"$T/l-py"; cmp -s "$T/l-py" "$T/l-dir" && pass || fail "the same losses from huggingface_hub's download"
else
  echo "  (no huggingface_hub at $PY: the cross-check with huggingface_hub skipped)"
fi
finish
