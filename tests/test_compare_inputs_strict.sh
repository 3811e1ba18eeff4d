#!/usr/bin/env bash
# tests/test_compare_inputs_strict.sh: inputs compare, report and baseline refuse or say plainly: a baseline
# whose loss was never recorded ('-' or nan in every row), no loss at the steps in common, "max
# |diff| none"; --history with --baselines; --since seconds without Z; max_memory_ratio 0;
# --ensemble spelt other than digits; hexadecimal and underflowing reals in a baseline file;
# gnuplot's exit status in words; the first failing step's line drawn over the tolerance band.
# usage: test_compare_inputs_strict.sh HARNESS_EXE SOURCE_DIR
set -u
H="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; SRC="$(cd "$2" && pwd)"
. "$(dirname "$0")/lib.sh"
prints() { if grep -qF -- "$1" "$T/out"; then pass; else fail "stdout lacks '$1':"; sed 's/^/    /' "$T/out" | head -20; fi; }
lacks_out() { if grep -qF -- "$1" "$T/out"; then fail "stdout has '$1'"; else pass; fi; }
runs() { sqlite3 "$1" "SELECT count(*) FROM runs"; }
# edit IN OUT LABEL AWK: the baseline file IN with its label and its step rows rewritten by AWK
# (fields: $1 step, $2 loss, ...)
edit() { awk -v lab="$3" '/^label: /{print "label: " lab; next} /^step /{t=1; print; next} t && NF {'"$4"'} {print}' "$1" >"$2"; }

cd "$T"
python3 - "$SRC/scenarios/gpt2-tiny.json" "$T/t32.json" <<'EOF'
import json, os, sys
s = json.load(open(sys.argv[1]))
s["name"] = "t32"; s["train"]["steps"] = 8; s.pop("tolerances", None)
s["data"]["path"] = os.path.join(os.path.dirname(sys.argv[1]), s["data"]["path"])
json.dump(s, open(sys.argv[2], "w"))
EOF
db="$T/h.db"
expect 0 "run 1" -- "$H" run "$T/t32.json" --db "$db" --quiet
expect 0 "run 2" -- "$H" run "$T/t32.json" --db "$db" --quiet
expect 0 "record run 1" -- "$H" baseline record 1 --label cpu --out "$T/b.baseline" --db "$db"

# ---- a loss never recorded: '-' or nan in every row is an input error, the store unchanged
edit b.baseline dash.baseline dash '$2 = "-"'
edit b.baseline nan.baseline nan '$2 = "nan"'
before=$(runs "$db")
for k in dash nan; do
  expect 2 "compare with a baseline whose loss is all $k" -- "$H" compare 2 --baseline "$k.baseline" --db "$db"
  says "$k.baseline: loss: not recorded at any of its 8 steps"
  [ "$(runs "$db")" = "$before" ] && pass || fail "compare with $k.baseline changed the store"
done
expect 0 "report with the all-nan baseline: a row without baseline" -- "$H" report 2 --baseline nan.baseline --out rn --no-plots --db "$db"
grep -q "loss: not recorded" "$T/err" && pass || fail "report does not say why the baseline is unusable"
# a few nan losses stay recorded NaNs: compare fails them
edit b.baseline somenan.baseline somenan 'if ($1 == 3) $2 = "nan"'
expect 1 "a recorded nan at one step" -- "$H" compare 2 --baseline somenan.baseline --db "$db"
prints "loss at step 3"
# losses recorded, but not at any step the run has: said, and no "max |diff| 0 (step 0)"
edit b.baseline late.baseline late '$2 = "-"'
sed -i 's/^steps: 8$/steps: 9/' late.baseline
tail -1 b.baseline | awk '{$1 = 9; print}' >>late.baseline
expect 1 "no loss at the common steps" -- "$H" compare 2 --baseline late.baseline --db "$db"
prints "the baseline records no loss at any of the 8 steps it has in common with the run"
prints "max |diff| none"; lacks_out "(step 0)"
# no step in common at all
edit b.baseline far.baseline far '$1 = $1 + 100'
# a committed-file place that holds a FIFO or a device is that baseline, refused by what it is
mkdir -p "$T/bfifo"; mkfifo "$T/bfifo/t32.q.baseline"; ln -s /dev/zero "$T/bfifo/t32.z.baseline"
expect 2 "a committed baseline that is a FIFO" -- timeout 60 "$H" compare 2 --baseline q --baselines "$T/bfifo" --db "$db"; says "it is a FIFO"
expect 2 "a committed baseline that is a device" -- timeout 60 "$H" compare 2 --baseline z --baselines "$T/bfifo" --db "$db"; says "character device"
expect 1 "no step in common" -- "$H" compare 2 --baseline far.baseline --db "$db"
prints "no step in common with the baseline (8 run steps, 8 baseline steps)"; prints "max |diff| none"
expect 1 "report: JUnit says none, not 0" -- "$H" report 2 --baseline far.baseline --out rf --no-plots --db "$db"
grep -q "max abs dloss none" rf/junit.xml && pass || fail "junit.xml: $(grep -o 'max abs dloss [^;]*' rf/junit.xml)"

# ---- reals of a baseline file: no hexadecimal, no underflow to 0, as 1e400 is refused
edit b.baseline hex.baseline hex 'if ($1 == 2) $2 = "0x1p+2"'
expect 2 "a hexadecimal loss" -- "$H" baseline import hex.baseline --db "$T/x.db"
says "loss: '0x1p+2' is a hexadecimal number"
edit b.baseline tiny.baseline tiny 'if ($1 == 2) $3 = "1e-400"'
expect 2 "a grad norm that underflows" -- "$H" baseline import tiny.baseline --db "$T/x.db"
says "grad_norm: '1e-400' is too small for a double"
edit b.baseline sub.baseline sub 'if ($1 == 2) $3 = "4.9406564584124654e-324"'
expect 0 "a subnormal grad norm reads as itself" -- "$H" baseline import sub.baseline --db "$T/x.db"
ens="$T/ens.baseline" # format 3: loss_std and loss_scale columns (no scale: an fp32 run)
sed -e 's/^format: harness-baseline 1$/format: harness-baseline 3/' -e 's/^label: cpu$/label: e/' \
    -e 's/^steps: 8$/steps: 8\nensemble_runs: 2/' -e '/^step /s/$/ loss_std loss_scale/' b.baseline |
  awk '/^step /{t=1; print; next} t && NF {print $0 " 0.001 -"; next} {print}' >"$ens"
expect 0 "the format-3 fixture imports" -- "$H" baseline import "$ens" --db "$T/x.db"
for bad in "loss_std 0x1p-3 a.hexadecimal" "loss_std 1e-400 too.small" "loss_scale 0x10 a.hexadecimal" "loss_scale 1e-400 too.small"; do
  set -- $bad
  col=$( [ "$1" = loss_std ] && echo 11 || echo 12 )
  awk -v c="$col" -v v="$2" '/^step /{t=1; print; next} t && $1 == 4 {$c = v} {print}' "$ens" | sed 's/^label: e$/label: e2/' >"$T/e2.baseline"
  expect 2 "$1 $2" -- "$H" baseline import "$T/e2.baseline" --db "$T/x.db"
  says "$1: '$2' is $(echo "$3" | tr . ' ')"
done

# ---- a baseline that ends before the run: the steps past it are not compared, and it says so
# (a baseline cut short passed a run that drifted after its end without a word)
awk '/^steps:/ { print "steps: 2"; next } /^step /{t=1; print; next} t && NF && $1 > 2 { next } {print}' b.baseline |
  sed 's/^label: cpu$/label: short/' >short.baseline
expect 0 "compare with a baseline of 2 steps" -- "$H" compare 1 --baseline short.baseline --db "$db"
prints "the baseline ends at step 2: the run's steps 3..8 are not compared"

# ---- options
expect 2 "compare --history --baselines" -- "$H" compare 2 --history --baselines "$T" --db "$db"
says "--baselines"
expect 2 "report --since with seconds but no Z" -- "$H" report --since 2026-11-25T03:37:00 --db "$db"
says "a time with seconds ends in Z"
expect 0 "report --since with seconds and Z" -- "$H" report --since 2999-01-01T00:00:00Z --db "$db"
for n in 2e0 2.0 +2 " 2" 0x2 ""; do
  expect 2 "--ensemble '$n'" -- "$H" baseline record "$T/t32.json" --ensemble "$n" --label e --db "$T/e.db"
done
[ ! -e "$T/e.db" ] && pass || fail "a refused --ensemble made a store"
python3 - "$T/t32.json" "$T/mem0.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1])); s["tolerances"] = {"max_memory_ratio": 0}
json.dump(s, open(sys.argv[2], "w"))
EOF
expect 2 "max_memory_ratio 0" -- "$H" run "$T/mem0.json" --db "$T/m.db" --quiet
says "max_memory_ratio"
[ ! -e "$T/m.db" ] && pass || fail "a refused scenario made a store"

# ---- plots: gnuplot's exit status in words; the failing step's line over the band
mkdir -p fake3 fake9
printf '#!/bin/sh\nexit 3\n' >fake3/gnuplot
printf '#!/bin/sh\nkill -9 $$\n' >fake9/gnuplot
chmod +x fake3/gnuplot fake9/gnuplot
expect 2 "gnuplot exits 3" -- env PATH="$T/fake3:$PATH" "$H" report 2 --baseline 1 --out g3 --db "$db"
says "(exit status 3)"
expect 2 "gnuplot is killed" -- env PATH="$T/fake9:$PATH" "$H" report 2 --baseline 1 --out g9 --db "$db"
says "(killed by signal 9"
if command -v gnuplot >/dev/null; then
  edit b.baseline moved.baseline moved 'if ($1 == 3) $2 = $2 + 0.01'
  expect 1 "report a run failing at step 3" -- "$H" report 2 --baseline moved.baseline --out rp --db "$db"
  # the red dashed line comes after (over) the filled band in the SVG's drawing order
  python3 - rp/plots/dloss_1.svg <<'EOF' && pass || fail "the failing step's line is drawn behind the band"
import re, sys
svg = open(sys.argv[1]).read()
band = max(m.start() for m in re.finditer(r"<polygon fill = '[^']*' fill-opacity", svg))
line = [m.start() for m in re.finditer(r"stroke='rgb\(255,\s*0,\s*0\)' stroke-dasharray", svg)]
sys.exit(0 if line and min(line) > band else 1)
EOF
else
  echo "no gnuplot: the drawing order is not checked"
fi

# ---- baseline record: two labels whose file names are one ("p q", "p_q"), or a label whose file
# name is longer than the file system takes: exit 2 before anything is written or labelled
expect 0 "record label 'p q'" -- "$H" baseline record 1 --label "p q" --dir "$T/bd" --db "$db"
sum=$(sha256sum <"$T/bd/t32.p_q.baseline"); dbsum=$(sha256sum <"$db")
expect 2 "record label 'p_q' onto the same file" -- "$H" baseline record 2 --label "p_q" --dir "$T/bd" --db "$db"
says "holds another baseline"
[ "$(sha256sum <"$T/bd/t32.p_q.baseline")" = "$sum" ] && pass || fail "label p_q overwrote label p q's file"
[ "$(sha256sum <"$db")" = "$dbsum" ] && pass || fail "the refused record labelled a run"
expect 0 "record label 'p q' again" -- "$H" baseline record 2 --label "p q" --dir "$T/bd" --db "$db"
expect 2 "a label too long for a file name" -- "$H" baseline record 1 --label "$(printf 'x%.0s' $(seq 300))" --dir "$T/bd2" --db "$db"
says "at most 255"
[ ! -e "$T/bd2" ] && pass || fail "the refused record made its folder"
finish
