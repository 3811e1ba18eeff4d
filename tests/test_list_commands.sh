#!/usr/bin/env bash
# tests/test_list_commands.sh: `harness runs`, `show` and `devices` from the outside: --help, bad
# arguments, missing, corrupt and foreign stores, and the devices table and JSON. Needs no Python.
# usage: bash tests/test_list_commands.sh HARNESS_EXE SOURCE_DIR
set -u
H=${1:?usage: test_list_commands.sh HARNESS_EXE SOURCE_DIR}
case "$H" in /*) ;; *) H="$PWD/$H" ;; esac
SRC=${2:?usage: test_list_commands.sh HARNESS_EXE SOURCE_DIR}
. "$(dirname "$0")/lib.sh"

# expect CODE WHAT CMD...: this script's own (no "--"; exit 2 also needs a message on stderr):
# runs CMD; its exit code must be CODE. stdout and stderr stay in $T/out and $T/err.
expect() {
    local want=$1 what=$2
    shift 2
    "$@" >"$T/out" 2>"$T/err"
    local got=$?
    if [ "$got" != "$want" ]; then
        fail "$what: exit $got, expected $want"
        sed 's/^/    stderr: /' "$T/err"
        return 1
    fi
    if [ "$want" = 2 ] && [ ! -s "$T/err" ]; then
        fail "$what: exit 2 without a message on stderr"
        return 1
    fi
    echo "ok: $what"
}

# grep_in FILE PATTERN WHAT
grep_in() {
    grep -q -- "$2" "$T/$1" || fail "$3: '$2' not in $1: $(head -c 300 "$T/$1")"
}

no_side_files() {
    local s
    for s in -wal -shm -journal; do
        [ -e "$1$s" ] && fail "$2: $1$s was left behind"
    done
    return 0
}

# ---- --help: exit 0 and every option named ----------------------------------------------------
for spec in "runs --db --limit --json" "show --db --json" "devices --json"; do
    set -- $spec
    cmd=$1
    shift
    for h in --help -h; do
        expect 0 "$cmd $h" "$H" "$cmd" "$h" && grep_in out "usage: harness $cmd" "$cmd $h"
    done
    for opt in "$@"; do
        grep_in out "$opt" "$cmd --help names $opt"
    done
done

# ---- bad arguments: exit 2 with a message ------------------------------------------------------
expect 2 "runs: unknown option" "$H" runs --bogus
expect 2 "runs: extra argument" "$H" runs extra
expect 2 "runs: --limit not a number" "$H" runs --limit abc
expect 2 "runs: --limit negative" "$H" runs --limit -1
expect 2 "runs: --limit 1.5" "$H" runs --limit=1.5
expect 2 "runs: --limit without value" "$H" runs --limit
expect 2 "runs: --db without value" "$H" runs --db
expect 2 "runs: --json with a value" "$H" runs --json=yes
expect 2 "show: no RUN" "$H" show
expect 2 "show: RUN not a number" "$H" show abc
expect 2 "show: RUN 12x" "$H" show 12x
expect 2 "show: RUN 0" "$H" show 0
expect 2 "show: two RUNs" "$H" show 1 2
expect 2 "show: unknown option" "$H" show 1 --bogus
expect 2 "show: --db without value" "$H" show 1 --db
expect 2 "devices: unknown option" "$H" devices --bogus
expect 2 "devices: extra argument" "$H" devices extra
grep_in err "extra" "devices: message names the argument"

# ---- missing store: exit 2, nothing created ----------------------------------------------------
missing="$T/missing.db"
expect 2 "runs: missing --db" "$H" runs --db "$missing" && grep_in err "no database at" "runs"
[ -e "$missing" ] && fail "runs created $missing"
expect 2 "show: missing --db" "$H" show 1 --db "$missing" && grep_in err "no database at" "show"
[ -e "$missing" ] && fail "show created $missing"
no_side_files "$missing" "missing store"
mkdir "$T/empty"
(cd "$T/empty" && "$H" runs >/dev/null 2>"$T/err")
rc=$?
[ $rc = 2 ] || fail "runs without harness.db in the directory: exit $rc, expected 2"
grep_in err "no database at harness.db" "runs without --db"
[ -e "$T/empty/harness.db" ] && fail "runs created harness.db"

# ---- files that are not stores: exit 2, file unchanged ----------------------------------------
printf 'step,loss\n1,2.5\n2,2.4\n' >"$T/text.db"
head -c 4096 /dev/urandom >"$T/random.db"
printf 'SQLite format 3\000' >"$T/header.db"
head -c 8192 /dev/urandom >>"$T/header.db"
for name in text random header; do
    f="$T/$name.db"
    cp "$f" "$T/copy"
    expect 2 "runs: $name file" "$H" runs --db "$f"
    expect 2 "show: $name file" "$H" show 1 --db "$f" --json
    grep_in err "$f" "$name file: message names the file"
    cmp -s "$f" "$T/copy" || fail "$name file was modified"
    no_side_files "$f" "$name file"
done
: >"$T/zero.db"
expect 2 "runs: empty file" "$H" runs --db "$T/zero.db"
[ -s "$T/zero.db" ] && fail "runs wrote into an empty file"

# ---- SQLite files that are not harness stores (only where the sqlite3 CLI exists) --------------
if command -v sqlite3 >/dev/null; then
    sqlite3 "$T/newer.db" "PRAGMA user_version = 9999;"
    expect 2 "runs: newer schema" "$H" runs --db "$T/newer.db" &&
        grep_in err "newer than this harness" "newer schema"
    sqlite3 "$T/foreign.db" "CREATE TABLE notes(x); INSERT INTO notes VALUES ('hi');"
    cp "$T/foreign.db" "$T/copy"
    expect 2 "runs: another program's database" "$H" runs --db "$T/foreign.db" &&
        grep_in err "not a harness store" "foreign database"
    cmp -s "$T/foreign.db" "$T/copy" || fail "foreign database was modified"
else
    echo "skip: sqlite3 CLI not found (newer-schema and foreign-database checks)"
fi

# ---- the order of runs and imported baselines (issue 8, item 9) --------------------------------
expect 0 "runs --help says the order" "$H" runs --help &&
    grep_in out "by id descending" "runs --help: order" && grep_in out "imported" "runs --help: imported"
sed 's/^status: ok$/status: ok\nthreads: 6\nload_avg: 0.75/' "$SRC/baselines/gpt2-tiny.cpu.baseline" >"$T/t.baseline"
expect 0 "import a baseline" "$H" baseline import "$T/t.baseline" --db "$T/imp.db"
expect 0 "runs lists it as imported" "$H" runs --db "$T/imp.db" &&
    grep_in out "^1 runs in .*newest first (by id: the order recorded or imported)" "runs: order line" &&
    grep_in out "THREADS  KIND" "runs: columns" && grep_in out " 6  imported$" "runs: threads and kind"
expect 0 "runs --json" "$H" runs --db "$T/imp.db" --json &&
    grep_in out '"imported": true' "runs --json: imported" && grep_in out '"threads": 6' "runs --json: threads" &&
    grep_in out '"load_avg": 0.75' "runs --json: load_avg"
expect 0 "show says imported" "$H" show 1 --db "$T/imp.db" &&
    grep_in out "^kind  *imported" "show: kind" && grep_in out "^threads  *6$" "show: threads"

# ---- devices -----------------------------------------------------------------------------------
expect 0 "devices" "$H" devices && grep_in out "SPEC" "devices header" && grep_in out "^cpu " "devices lists cpu"
expect 0 "devices --json" "$H" devices --json
if command -v jq >/dev/null; then
    jq -e 'type == "array" and length >= 1 and
           all(.[]; has("spec") and has("name") and has("vendor") and has("dtype") and
                    (.mem_total_bytes | type) == "number")' "$T/out" >/dev/null ||
        fail "devices --json is not the expected JSON array: $(head -c 300 "$T/out")"
    [ "$(jq -r '.[0].spec' "$T/out")" = cpu ] || fail "devices --json: first spec is not cpu"
else
    echo "skip: jq not found, checking devices --json by grep only"
    head -c 1 "$T/out" | grep -q '\[' || fail "devices --json does not start with ["
    grep_in out '"spec": "cpu"' "devices --json lists cpu"
fi
# a backend built in that has no device here says why on a line of its own (README: Devices);
# opencl said nothing when no OpenCL platform could be found
"$H" devices >"$T/out" 2>&1
if grep -q '^backends in this build:.* opencl' "$T/out"; then
    expect 0 "devices with no OpenCL ICD" env OCL_ICD_VENDORS="$T/no-icd" "$H" devices &&
        grep_in out "^opencl: no OpenCL device on this machine (" "devices says why opencl has none"
fi

if [ "$fails" -gt 0 ]; then
    echo "$fails check(s) failed"
    exit 1
fi
echo "all checks passed"
