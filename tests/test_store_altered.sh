#!/usr/bin/env bash
# tests/test_store_altered.sh: stores someone altered, and baseline files that misstate loss
# scaling: refused with exit 2 and left as they were; a store read while an MoE run writes.
# usage: test_store_altered.sh HARNESS_EXE SOURCE_DIR
set -u
H="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; SRC="$(cd "$2" && pwd)"
. "$(dirname "$0")/lib.sh"
cd "$T"
sha() { sha256sum <"$1" | cut -c1-64; }
sql() { python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()' "$@"; }
printf 'HARNESS_STEP {"v":1,"step":1,"loss":2.5}\nHARNESS_STEP {"v":1,"step":2,"loss":2.25}\n' >a.log
fresh() { rm -f "$1"*; "$H" ingest a.log --device cpu --db "$1" >/dev/null 2>&1 || fail "ingest into $1"; }

# ---- values this harness never writes: text or a blob in a real column, a step out of range,
# a run_extra that admits a NULL key, and holds one (SIGSEGV in compare, report and baseline
# record: the table's columns differ from the schema's now, refused before it is read)
fresh t.db
sql t.db "UPDATE steps SET loss = 'abc' WHERE step = 2"
expect 2 "show: text in steps.loss" -- "$H" show 1 --db t.db
says "step 2: steps.loss holds 'abc', not a number this harness writes"
expect 2 "compare: text in steps.loss (not 'diverged')" -- "$H" compare 1 --baseline 1 --db t.db
fresh t.db
sql t.db "UPDATE steps SET grad_norm = X'0102' WHERE step = 1"
expect 2 "show: a blob in steps.grad_norm" -- "$H" show 1 --db t.db; says "steps.grad_norm holds '(a blob)'"
fresh t.db
sql t.db "UPDATE steps SET tokens = 'many' WHERE step = 1"
expect 2 "show: text in steps.tokens" -- "$H" show 1 --db t.db; says "steps.tokens holds 'many'"
fresh t.db
sql t.db "UPDATE steps SET step = 5000000000 WHERE step = 2"
expect 2 "show: a step past 2^31" -- "$H" show 1 --db t.db; says "steps.step '5000000000'"
fresh t.db
sql t.db "DROP TABLE run_extra; CREATE TABLE run_extra(run_id INTEGER NOT NULL, seq INTEGER NOT NULL, key TEXT, value TEXT, PRIMARY KEY (run_id, seq)) WITHOUT ROWID; INSERT INTO run_extra VALUES(1, 0, NULL, 'v');"
s0=$(sha t.db)
for c in "compare 1 --history" "baseline record 1 --label x --out $T/x.baseline" "report --out $T/rep --no-plots"; do
  expect 2 "$c: a NULL run_extra key" -- "$H" $c --db t.db
  says "table 'run_extra' has other columns than this harness's schema"
done
[ "$(sha t.db)" = "$s0" ] && [ ! -e t.db-wal ] && pass || fail "a store with a NULL run_extra key changed"

# ---- a table dropped, a column dropped (in rollback-journal mode), a trigger planted: refused
# before anything is written (ingest recorded a failed run; the WAL switch rewrote the header)
fresh m.db
sql m.db "DROP TABLE run_extra"
s0=$(sha m.db)
expect 2 "ingest into a store without run_extra" -- "$H" ingest a.log --device cpu --db m.db
says "a harness store without its table 'run_extra'"
expect 2 "runs of a store without run_extra" -- "$H" runs --db m.db
[ "$(sha m.db)" = "$s0" ] && pass || fail "a store without run_extra changed"
fresh j.db
sql j.db "PRAGMA journal_mode = DELETE; ALTER TABLE steps DROP COLUMN threads;"
s0=$(sha j.db)
expect 2 "ingest into a store without steps.threads" -- "$H" ingest a.log --device cpu --db j.db
says "table 'steps' has other columns than this harness's schema"
[ "$(sha j.db)" = "$s0" ] && pass || fail "a refused store was switched to WAL"
fresh g.db
sql g.db "CREATE TRIGGER wipe AFTER INSERT ON runs BEGIN DELETE FROM steps; END;"
s0=$(sha g.db)
expect 2 "ingest into a store with a planted trigger" -- "$H" ingest a.log --device cpu --db g.db
says "the store holds a trigger 'wipe'"
[ "$(sha g.db)" = "$s0" ] && pass || fail "a store with a planted trigger changed"
fresh v.db # a view (a dashboard's) and a table of one's own are harmless: kept, the store used
sql v.db "CREATE VIEW losses AS SELECT step, loss FROM steps; CREATE TABLE notes(x);"
expect 0 "ingest into a store with a view and a table of one's own" -- "$H" ingest a.log --device cpu --db v.db
# an SQLite database without any schema object: run --compare with an unknown baseline leaves it
sql e.db "CREATE TABLE t(x); DROP TABLE t; VACUUM;"
s0=$(sha e.db)
python3 - "$SRC/scenarios/gpt2-tiny.json" "$T/t3.json" <<'EOF'
import json, os, sys
s = json.load(open(sys.argv[1]))
s["train"]["steps"] = 2
s["data"]["path"] = os.path.join(os.path.dirname(sys.argv[1]), s["data"]["path"])
json.dump(s, open(sys.argv[2], "w"))
EOF
expect 2 "run --compare --baseline nosuch on an empty database" -- "$H" run "$T/t3.json" --compare --baseline nosuch --quiet --db e.db
[ "$(sha e.db)" = "$s0" ] && pass || fail "an empty SQLite database was given the schema"

# ---- a store copied with its -wal but not its -shm, into a folder the reader cannot write: a
# message that says so (SQLite's was "unable to open database file")
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  mkdir -p ro; fresh ro/s.db
  python3 - ro/s.db <<'EOF'
import os, sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.execute("PRAGMA wal_autocheckpoint = 0")
c.execute("UPDATE runs SET host = 'h2'"); c.commit(); os._exit(0)
EOF
  rm -f ro/s.db-shm; chmod 755 "$T"; chmod 555 ro; chmod 444 ro/*
  expect 2 "a -wal without its -shm in a read-only folder" -- setpriv --reuid=65534 --regid=65534 --clear-groups "$H" runs --db "$T/ro/s.db"
  says "its -wal file is here without its -shm"
  chmod 755 ro
else
  echo "skip: not root, or no setpriv (a -wal without its -shm in a read-only folder)"
fi

# ---- baseline files: loss scaling only where fp16 scales, a skipped step's grad norm is not
# finite, skipped with loss_scale; hashes in lower case; a file without a date imported once
hash=$(printf 'a%.0s' $(seq 64))
mk() { f=$1 l=$2 dt=$3 cols=$4; shift 4; { printf 'format: harness-baseline 1\nlabel: %s\nscenario: t\nscenario_hash: %s\ndevice: cpu\ndtype: %s\nworld_size: 1\n%ssteps: %d\n\n%s\n' "$l" "$hash" "$dt" "${DATE-date: 2026-01-01T00:00:00Z
}" $# "$cols"; printf '%s\n' "$@"; } >"$f"; }
C="step loss grad_norm loss_scale skipped"
mk s.baseline s fp16 "$C" "1 5 3 65536 0" "2 4 99 65536 1"
expect 2 "skipped with a finite grad norm" -- "$H" baseline import s.baseline --db b.db
says "s.baseline:13: skipped: 1 with the finite grad_norm 99"
mk bf.baseline bf bf16 "$C" "1 5 3 - 0" "2 4 inf 65536 1"
expect 2 "loss scaling in a bf16 baseline" -- "$H" baseline import bf.baseline --db b.db
says "bf.baseline:13: skipped: loss scaling in a bf16 baseline"
mk sk.baseline sk fp16 "step loss grad_norm skipped" "1 5 3 0" "2 4 inf 1"
expect 2 "skipped without loss_scale" -- "$H" baseline import sk.baseline --db b.db
says "column skipped goes with loss_scale"
[ ! -e b.db ] && pass || fail "a refused baseline file made a store"
mk hc.baseline hc fp32 "step loss" "1 5"
sed -i 's/^scenario_hash: a*/scenario_hash: '"$(printf 'A%.0s' $(seq 64))"'/' hc.baseline
expect 2 "an upper-case scenario_hash" -- "$H" baseline import hc.baseline --db b.db; says "64 lower-case hex digits"
mk 123.baseline 123 fp32 "step loss" "1 5"
expect 2 "a label that is all digits" -- "$H" baseline import 123.baseline --db b.db; says "123.baseline: label '123' is all digits"
# a step without a loss scale round-trips as '-' (record wrote 0, which import refuses)
mk ls.baseline ls fp16 "$C" "1 5 3 - 0" "2 4 inf 65536 1"
expect 0 "import a baseline with a '-' loss scale" -- "$H" baseline import ls.baseline --db b.db
expect 0 "record it" -- "$H" baseline record 1 --label ls2 --out "$T/ls2.baseline" --db b.db
grep -q '^1 5 3 .* - 0$' ls2.baseline && pass || fail "a NULL loss scale written as: $(grep '^1 ' ls2.baseline)"
expect 0 "import the record's own output" -- "$H" baseline import "$T/ls2.baseline" --db b2.db
expect 0 "show it" -- "$H" show 1 --db b.db
grep -qE '^ +1 .* - +no$' "$T/out" && pass || fail "show's loss scale of a step without one: $(grep -E '^ +1 ' "$T/out")"
# no date: compared twice, imported once; imported again: the same content
DATE='' mk nd.baseline nd fp32 "step loss grad_norm" "1 5 3" "2 4 2"
expect 0 "import a run to compare" -- "$H" ingest a.log --device cpu --db d.db
expect 1 "compare with a file without a date" -- "$H" compare 1 --baseline "$T/nd.baseline" --force --db d.db
expect 1 "compare with it again" -- "$H" compare 1 --baseline "$T/nd.baseline" --force --db d.db
[ "$("$H" runs --db d.db --json | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')" = 2 ] &&
  pass || fail "a baseline file without a date was imported on every compare"
expect 0 "import the same file" -- "$H" baseline import nd.baseline --db d.db; grep -qF "already in the store" "$T/out" && pass || fail "re-import: $(cat "$T/out")"

# ---- show while an MoE run is being written: the counts and the steps read from one snapshot
# (two statements read two snapshots and wrote past the arrays: heap overflow, SIGSEGV)
fresh r.db
python3 - r.db <<'EOF' &
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=5)
c.execute("INSERT INTO runs(id, scenario, device, started_at, status) VALUES(50, 'moe', 'cpu', 't', 'running')")
for s in range(1, 1201):
    c.execute("BEGIN"); c.execute("INSERT INTO steps(run_id, step, loss) VALUES(50, ?, 1.0)", (s,))
    c.executemany("INSERT INTO expert_tokens VALUES(50, ?, ?, ?, 7)", [(s, l, e) for l in range(8) for e in range(8)])
    c.execute("COMMIT"); time.sleep(0.004)
EOF
writer=$!
bad=0
wait_until 30 "the writer's first steps" -- python3 -c 'import sqlite3, sys; sys.exit(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM steps WHERE run_id = 50").fetchone()[0] < 5)' r.db
for i in $(seq 40); do "$H" show 50 --db r.db >/dev/null 2>"$T/show.err"; rc=$?; [ $rc = 0 ] || { bad=$rc; break; }; done
wait $writer
[ "$bad" = 0 ] && pass || { fail "show during an MoE write: exit $bad"; head -3 "$T/show.err"; }
finish
