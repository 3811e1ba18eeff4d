#!/usr/bin/env bash
# tests/test_store_targets.sh: what `run` writes never lands on the store or through a link: a
# damaged store, SQLite's special names, --save and --dump-batches aimed at the store or its WAL.
# usage: test_store_targets.sh HARNESS_EXE SOURCE_DIR
set -u
H="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; SRC="$(cd "$2" && pwd)"
. "$(dirname "$0")/lib.sh"
cd "$T"
export HARNESS_THREADS=1
head -c 20000 "$SRC/scenarios/data/corpus.txt" >small.txt
cat >t.json <<'EOF'
{"name": "t",
 "model": {"family": "gpt2",
   "config": {"vocab_size": 256, "n_positions": 32, "n_embd": 16, "n_layer": 1, "n_head": 2},
   "overrides": {"attn_pdrop": 0, "embd_pdrop": 0, "resid_pdrop": 0}},
 "data": {"path": "small.txt", "seq_len": 16},
 "train": {"steps": 3, "batch_size": 2, "lr": 1e-3}}
EOF
expect 0 "a first run" -- "$H" run t.json --db a.db --quiet

# ---- a store with damaged pages: refused before anything is written (SQLite would write
# around the damage, or reuse a run id) ----
cp a.db bad.db
python3 -c "f = open('bad.db', 'r+b'); f.seek(5000); f.write(b'\xff' * 3000)"
sum=$(sha256sum <bad.db)
expect 2 "run into a damaged store" -- "$H" run t.json --db bad.db --quiet
says "bad.db: the database is damaged"
[ "$(sha256sum <bad.db)" = "$sum" ] && pass || fail "the damaged store was written"
printf 'HARNESS_STEP {"v":1,"step":1,"loss":2.0}\n' >one.log
expect 2 "ingest into a damaged store" -- "$H" ingest one.log --device x --db bad.db
[ "$(sha256sum <bad.db)" = "$sum" ] && pass || fail "ingest wrote the damaged store"

# ---- --db names a file, never an in-memory database or a URI ----
expect 0 "--db :memory:" -- "$H" run t.json --db :memory: --quiet
[ -s ./:memory: ] && pass || fail "--db :memory: kept no file of that name"
expect 0 "runs --db :memory: reads that file" -- "$H" runs --db :memory:
grep -q " t " "$T/out" && pass || fail "the run is not in ./:memory:"
expect 0 "--db file:u.db?mode=memory" -- "$H" run t.json --db 'file:u.db?mode=memory' --quiet
[ -s 'file:u.db?mode=memory' ] && pass || fail "the URI-looking --db made no file of that name"
[ ! -e u.db ] && pass || fail "the --db was read as a URI (u.db made)"

# ---- --save and --dump-batches never aimed at the store, its WAL, or through a dangling link ----
mkdir sv
expect 2 "--save over the store" -- "$H" run t.json --db sv/config.json --save sv --quiet
says "would write config.json, which is the store"
[ ! -e sv/config.json ] && pass || fail "the refused run made the store"
ln -s a.db-wal towal
expect 2 "--dump-batches through a link to the WAL" -- "$H" run t.json --db a.db --dump-batches towal --quiet
says "SQLite's file beside the store"
ln -s "$T/nodir/zz" dangling
cp a.db c.db; sum=$(sha256sum <c.db)
expect 2 "--dump-batches through a dangling link into no folder" -- "$H" run t.json --db c.db --dump-batches dangling --quiet
says "nodir"
[ "$(sha256sum <c.db)" = "$sum" ] && pass || fail "a refused dump wrote the store"
mkdir -p sv2/config.json
expect 2 "--save where config.json is a folder" -- "$H" run t.json --db c.db --save sv2 --quiet
says "sv2/config.json is a directory"
[ "$(sha256sum <c.db)" = "$sum" ] && pass || fail "a refused --save wrote the store"
# a FIFO as the dump: refused before the run is recorded (opening it blocked the run, with its
# row already 'running', deaf to SIGTERM)
mkfifo fifo
cp a.db f.db; sum=$(sha256sum <f.db)
expect 2 "--dump-batches onto a FIFO" -- timeout 60 "$H" run t.json --db f.db --dump-batches fifo --quiet
says "it is a FIFO"
[ "$(sha256sum <f.db)" = "$sum" ] && pass || fail "a refused FIFO dump wrote the store"
expect 0 "--dump-batches /dev/null" -- "$H" run t.json --db f.db --dump-batches /dev/null --quiet
finish
