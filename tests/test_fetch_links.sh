#!/usr/bin/env bash
# tests/test_fetch_links.sh: `harness fetch` never writes through what is planted in the cache: a
# symlink, a hard link, a FIFO or a folder at blobs/ETAG.incomplete is refused (exit 2, the file
# a link points at untouched, nothing moved into blobs/, a symlink left for people to look at); a
# link at a ref's temporary name, where a blob goes or where a snapshot file goes is replaced,
# never written through. A small repo on the loopback fake hub (tools/fake_hub.py).
# usage: test_fetch_links.sh HARNESS_EXE SOURCE_DIR (needs HARNESS_PYTHON or BUILD/venv)
set -u
H="$1"; SRC="$(cd "$2" && pwd)"
. "$(dirname "$0")/lib.sh"
PY="${HARNESS_PYTHON:-$(cd "$(dirname "$H")" && pwd)/venv/bin/python}"
if ! "$PY" -c 'import http.server' 2>/dev/null; then
  echo "test_fetch_links: skipped: no Python at $PY for the loopback hub (set HARNESS_PYTHON)"
  exit 77
fi
S="$T/srv"; R="$S/hub/models/org/tiny"; mkdir -p "$R"
"$PY" "$SRC/tools/fake_hub.py" "$S" "$T/port" --lifetime 600 2>"$T/server.err" &
SRV=$!
trap 'kill $SRV 2>/dev/null; rm -rf "$T"' EXIT
wait_until 60 "the loopback server's port file" -- test -s "$T/port"
[ -s "$T/port" ] || { echo "test_fetch_links: the fake hub did not start:"; cat "$T/server.err"; exit 1; }
export HF_ENDPOINT="http://127.0.0.1:$(cat "$T/port")" HF_HOME="$T/hfhome"
export HARNESS_NET_BACKOFF_MS=1 HARNESS_NET_RETRIES=1 HF_HUB_DOWNLOAD_TIMEOUT=2 HF_HUB_ETAG_TIMEOUT=5
unset HF_TOKEN HUGGING_FACE_HUB_TOKEN HF_TOKEN_PATH HF_HUB_OFFLINE HF_HUB_CACHE HUGGINGFACE_HUB_CACHE
n_faults=0
faults() { n_faults=$((n_faults+1)); printf '{"n": %d, "rules": [%s]}\n' "$n_faults" "$1" >"$S/faults.json"; }
faults ''

# the repo: a small file, an empty one (git's blob id e69de29...) and an LFS file
printf '{"model_type": "gpt2"}\n' >"$R/config.json"; : >"$R/empty.txt"
head -c 200000 /dev/urandom >"$R/model.safetensors"
git_id() { "$PY" -c 'import hashlib,sys; d=open(sys.argv[1],"rb").read(); print(hashlib.sha1(b"blob %d\0" % len(d) + d).hexdigest())' "$1"; }
CFG_ID="$(git_id "$R/config.json")"; EMPTY_ID="$(git_id "$R/empty.txt")"
ST_SHA="$(sha256sum "$R/model.safetensors" | cut -d' ' -f1)"
# the sha256 fake_hub.py's badsha fault announces: that of the bytes and a '!'
BAD_SHA="$("$PY" -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read() + b"!").hexdigest())' "$R/model.safetensors")"
[ "$EMPTY_ID" = e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 ] && pass || fail "git's blob id of an empty file: $EMPTY_ID"

victim() { printf 'precious\n' >"$T/victim"; printf 'precious\n' >"$T/victim.was"; }
untouched() { cmp -s "$T/victim" "$T/victim.was" && pass || fail "$1: the file outside the cache was written: $(head -c 32 "$T/victim" | od -c | head -2)"; }

# refused CACHE ETAG WHAT: a link at blobs/ETAG.incomplete to $T/victim is refused, the victim is
# untouched, blobs/ETAG does not exist, no ref is written; the link removed, the fetch works
refused() {
  local c="$1" id="$2" what="$3" B="$1/models--org--tiny/blobs"
  victim; mkdir -p "$B"; ln -s "$T/victim" "$B/$id.incomplete"
  expect 2 "$what: a symlink at blobs/ETAG.incomplete" -- "$H" fetch org/tiny --cache "$c"
  says "is a symbolic link: refused"; untouched "$what"
  [ ! -e "$B/$id" ] && [ ! -L "$B/$id" ] && pass || fail "$what: blobs/$id exists: $(ls -l "$B/$id")"
  [ -L "$B/$id.incomplete" ] && pass || fail "$what: the planted link is left for people to see"
  [ ! -e "$c/models--org--tiny/refs/main" ] && pass || fail "$what: a failed fetch wrote refs/main"
  rm "$B/$id.incomplete"
}
refused "$T/c-cfg" "$CFG_ID" "a small file"
expect 0 "the link removed, the fetch works" -- "$H" fetch org/tiny --cache "$T/c-cfg"
B="$T/c-cfg/models--org--tiny/blobs"
[ -f "$B/$CFG_ID" ] && [ ! -L "$B/$CFG_ID" ] && cmp -s "$B/$CFG_ID" "$R/config.json" && pass || fail "the blob is a regular file with the content"
refused "$T/c-empty" "$EMPTY_ID" "an empty file"
refused "$T/c-lfs" "$ST_SHA" "an LFS file"
faults '{"match": "model.safetensors", "fault": "badsha"}'
refused "$T/c-bad" "$BAD_SHA" "an LFS file whose digest differs"
faults ''

# a FIFO or a folder there: refused at once (a FIFO never blocks the fetch)
B="$T/c-fifo/models--org--tiny/blobs"; mkdir -p "$B"; mkfifo "$B/$CFG_ID.incomplete"
expect 2 "a FIFO at blobs/ETAG.incomplete" -- timeout 60 "$H" fetch org/tiny --cache "$T/c-fifo"
says "is not a regular file"
[ -p "$B/$CFG_ID.incomplete" ] && [ ! -e "$B/$CFG_ID" ] && pass || fail "the FIFO left, no blob"
# a hard link to a file outside the cache: writing it would write that file
B="$T/c-hard/models--org--tiny/blobs"; mkdir -p "$B"; victim; ln "$T/victim" "$B/$ST_SHA.incomplete"
expect 2 "a hard link at blobs/ETAG.incomplete" -- "$H" fetch org/tiny --cache "$T/c-hard"
says "has other hard links"; untouched "a hard link"
B="$T/c-dir/models--org--tiny/blobs"; mkdir -p "$B/$ST_SHA.incomplete"
expect 2 "a folder at blobs/ETAG.incomplete" -- "$H" fetch org/tiny --cache "$T/c-dir"
says "is not a regular file"

# refs/REV is written through refs/REV.PID.tmp: a link planted at that name (the shell execs the
# harness, so $$ is its pid) is replaced, not written through
C="$T/c-ref"; victim; mkdir -p "$C/models--org--tiny/refs"
expect 0 "a symlink at refs/main's temporary name" -- bash -c 'ln -s "$1" "$2/refs/main.$$.tmp" && exec "$3" fetch org/tiny --cache "$4"' _ "$T/victim" "$C/models--org--tiny" "$H" "$C"
untouched "the ref's temporary name"
[ -f "$C/models--org--tiny/refs/main" ] && [ ! -L "$C/models--org--tiny/refs/main" ] && pass || fail "refs/main is a regular file: $(ls -l "$C/models--org--tiny/refs/main")"
[ "$(cat "$C/models--org--tiny/refs/main")" = "$(basename "$(cat "$T/out")")" ] && pass || fail "refs/main holds the commit"
[ -z "$(find "$C" -name '*.tmp')" ] && pass || fail "no temporary file left: $(find "$C" -name '*.tmp')"

# a link where a blob goes, and where a snapshot file goes: replaced by the real thing
C="$T/c-blob"; expect 0 "a first fetch" -- "$H" fetch org/tiny --cache "$C"; snap="$(cat "$T/out")"
B="$C/models--org--tiny/blobs"; victim
rm "$B/$CFG_ID"; ln -s "$T/victim" "$B/$CFG_ID"
rm "$snap/empty.txt"; ln -s "$T/victim" "$snap/empty.txt"
expect 0 "links planted at a blob and a snapshot file" -- "$H" fetch org/tiny --cache "$C"
untouched "a planted blob or snapshot link"
[ -f "$B/$CFG_ID" ] && [ ! -L "$B/$CFG_ID" ] && cmp -s "$B/$CFG_ID" "$R/config.json" && pass || fail "the planted blob link is replaced by the blob"
[ "$(readlink "$snap/empty.txt")" = "../../blobs/$EMPTY_ID" ] && pass || fail "the planted snapshot link is replaced: $(readlink "$snap/empty.txt")"
[ -z "$(find "$T"/c-* -name '*.tmp')" ] && pass || fail "temporary files left"

# a fetch that fails part way links no snapshot: an offline fetch pinned to its commit used to
# take the files linked before the failure for the whole repository (exit 0); one that fails at
# its first answer makes no folder at all (it made models--ORG--NAME/blobs first)
commit="$(basename "$snap")"
faults '{"match": "model.safetensors", "method": "HEAD", "fault": "status", "code": 404}'
C="$T/c-part"
expect 2 "a file the server refuses" -- "$H" fetch org/tiny --cache "$C"; says "HTTP 404"
[ ! -e "$C/models--org--tiny/snapshots" ] && pass || fail "a failed fetch left a snapshot: $(find "$C" -path '*snapshots*')"
expect 2 "offline, pinned to the commit of a failed fetch" -- env HF_HUB_OFFLINE=1 "$H" fetch "org/tiny@$commit" --cache "$C"
faults '{"match": "/resolve/", "method": "HEAD", "fault": "status", "code": 404}'
expect 2 "every file refused" -- "$H" fetch org/tiny --cache "$T/c-none"; says "HTTP 404"
[ -z "$(ls -A "$T/c-none" 2>/dev/null)" ] && pass || fail "a fetch refused at its first answer wrote: $(find "$T/c-none")"
# an X-Linked-Size that is no number was dropped for Content-Length without a word
faults '{"match": "model.safetensors", "method": "HEAD", "fault": "badsize"}'
expect 2 "an X-Linked-Size that is no number" -- "$H" fetch org/tiny --cache "$T/c-size"; says "X-Linked-Size: not a whole number of bytes"
faults ''
finish
