#!/usr/bin/env bash
# bench/bench_vs_torch.sh: the cpu backend's training step beside PyTorch's on the same config,
# threads and batch, run in turn in the same invocation; a table of ms/step, tokens/s, ratios.
# usage: bash bench/bench_vs_torch.sh [BUILD_DIR] [THREADS] [ROUNDS] [CONFIGS]
#   CONFIGS: comma-separated names out of gpt2-small,gpt2-124m,llama-tiny,bert-tiny (default all)
# Per config and round: the harness on cpu (bench_train / bench_llama), cpu64 (not for
# gpt2-124m: slow), and tools/bench_torch_peers.py's peers (gpt2: own module eager with SDPA,
# its torch.compile, transformers' model; llama, bert: transformers' model and its
# torch.compile). Each figure is the median over ROUNDS of each run's median (bench_llama: mean)
# step; every round's figure follows it. Dropout 0 on both sides. The torch peers need
# $HARNESS_PYTHON (or BUILD_DIR/venv) with torch and transformers; without them the harness
# figures are printed alone, saying so.
# No figure is asserted.
set -u
BUILD="${1:-build}"; THREADS="${2:-2}"; ROUNDS="${3:-3}"
CONFIGS="${4:-gpt2-small,gpt2-124m,llama-tiny,bert-tiny}"
SRC="$(cd "$(dirname "$0")/.." && pwd)"
for exe in bench_train bench_llama; do
  [ -x "$BUILD/$exe" ] || { echo "bench_vs_torch.sh: $BUILD/$exe not built (cmake --build $BUILD)" >&2; exit 2; }
done
case "$THREADS$ROUNDS" in *[!0-9]*|'') echo "bench_vs_torch.sh: THREADS and ROUNDS are positive integers" >&2; exit 2;; esac
[ "$THREADS" -ge 1 ] && [ "$ROUNDS" -ge 1 ] || { echo "bench_vs_torch.sh: THREADS and ROUNDS must be >= 1" >&2; exit 2; }
PY="${HARNESS_PYTHON:-$BUILD/venv/bin/python}"
torch_ok=0
"$PY" -c 'import torch, transformers' 2>/dev/null && torch_ok=1
if [ "$torch_ok" = 0 ]; then
  echo "bench_vs_torch.sh: torch is ABSENT (no Python with torch and transformers at $PY):"
  echo "  the harness figures only, no PyTorch peer and no ratio to it"
fi
# pinned on both sides: the cpu thread policy would adapt to the load otherwise
export OMP_NUM_THREADS="$THREADS" HARNESS_THREADS="$THREADS"
T="$(mktemp -d)"; trap 'rm -rf "$T"' EXIT

# name|kind|steps|tokens per step|flags (bench_train / bench_llama and the peers take the same)
all_configs=(
  "gpt2-small|gpt2|10|1024|--layers 4 --embd 256 --heads 4 --seq 128 --batch 8 --vocab 256"
  "gpt2-124m|gpt2|3|1024|--layers 12 --embd 768 --heads 12 --seq 256 --batch 4 --vocab 50257"
  "llama-tiny|llama|10|512|--layers 2 --hidden 64 --heads 4 --kv-heads 2 --inter 128 --seq 64 --batch 8 --vocab 256"
  "bert-tiny|bert|10|512|--layers 2 --embd 64 --heads 4 --inter 256 --seq 64 --batch 8 --vocab 1181"
)

# median of the numbers on stdin (empty when none)
median() { sort -g | awk '{v[NR]=$1} END {if (NR) print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

# one harness run: prints its step ms, or nothing on failure (the output kept in $T/last.log)
harness_ms() { # kind device flags
  local kind="$1" dev="$2"; shift 2
  if [ "$kind" = llama ]; then
    "$BUILD/bench_llama" --device "$dev" "$@" >"$T/last.log" 2>&1 &&
      awk '/harness +step/ {print $3; exit}' "$T/last.log"
  else
    "$BUILD/bench_train" --device "$dev" --family "$kind" --dropout 0 "$@" >"$T/last.log" 2>&1 &&
      awk '/step time/ {print $3; exit}' "$T/last.log"
  fi
}

# one torch peer run: prints its median step ms, or nothing on failure
torch_ms() { # kind peer flags
  local kind="$1" peer="$2"; shift 2
  local flags; flags="$(echo "$*" | sed 's/--hidden/--embd/')"
  # shellcheck disable=SC2086
  "$PY" "$SRC/tools/bench_torch_peers.py" --family "$kind" --peer "$peer" --threads "$THREADS" \
    $flags >"$T/last.log" 2>&1 && awk '/^torch_peer:/ {for (i=1;i<NF;i++) if ($i=="median_ms") print $(i+1)}' "$T/last.log"
}

peers_of() { [ "$1" = gpt2 ] && echo "eager compile hf" || echo "hf compile"; }

row() { # label ms tokens ref_ms ref_name rounds_file
  if [ -z "$2" ]; then printf "  %-34s %12s\n" "$1" "failed"; return; fi
  local ratio="-" rounds
  [ -n "$4" ] && ratio="$(awk -v a="$2" -v b="$4" 'BEGIN {printf "%.2fx", b / a}')"
  rounds="$(tr '\n' ' ' <"$6" 2>/dev/null | sed 's/ $//')"
  printf "  %-34s %12.2f %12.0f %10s%s  rounds: %s\n" "$1" "$2" "$(awk -v n="$3" -v ms="$2" 'BEGIN {print n / (ms / 1e3)}')" "$ratio" "${5:+ (vs $5)}" "$rounds"
}

echo "bench_vs_torch: $(date -u '+%Y-%m-%d %H:%M UTC'), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, $THREADS thread(s), $ROUNDS round(s), load $(cut -d' ' -f1-3 /proc/loadavg)"
status=0
for c in "${all_configs[@]}"; do
  IFS='|' read -r name kind steps tokens flags <<<"$c"
  case ",$CONFIGS," in *",$name,"*) ;; *) continue;; esac
  devices="cpu cpu64"; [ "$name" = gpt2-124m ] && devices="cpu"
  peers=""; [ "$torch_ok" = 1 ] && peers="$(peers_of "$kind")"
  for r in $(seq "$ROUNDS"); do # in turn, so a change of load hits every side
    for dev in $devices; do
      # shellcheck disable=SC2086
      ms="$(harness_ms "$kind" "$dev" $flags --steps "$steps")"
      [ -n "$ms" ] && echo "$ms" >>"$T/$name.$dev" || { status=1; echo "bench_vs_torch.sh: $name on $dev failed:" >&2; tail -3 "$T/last.log" >&2; }
    done
    for p in $peers; do
      # shellcheck disable=SC2086
      ms="$(torch_ms "$kind" "$p" $flags --steps "$steps")"
      [ -n "$ms" ] && echo "$ms" >>"$T/$name.$p" || { status=1; echo "bench_vs_torch.sh: $name torch $p failed:" >&2; tail -3 "$T/last.log" >&2; }
    done
  done
  ref=""; refname=""
  if [ "$torch_ok" = 1 ]; then
    refname="$( [ "$kind" = gpt2 ] && echo "torch eager" || echo "transformers")"
    ref="$(median <"$T/$name.$( [ "$kind" = gpt2 ] && echo eager || echo hf)" 2>/dev/null)"
  fi
  echo
  echo "== $name ($flags), $steps timed steps per run, load now $(cut -d' ' -f1 /proc/loadavg)"
  printf "  %-34s %12s %12s %10s\n" "" "ms/step" "tokens/s" "speed-up"
  cpu_ms="$(median <"$T/$name.cpu" 2>/dev/null)"
  row "harness cpu (fp32)" "$cpu_ms" "$tokens" "$ref" "$refname" "$T/$name.cpu"
  if [ "$devices" != cpu ]; then
    c64="$(median <"$T/$name.cpu64" 2>/dev/null)"
    row "harness cpu64 (fp64, golden)" "$c64" "$tokens" "$ref" "$refname" "$T/$name.cpu64"
    [ -n "$c64" ] && [ -n "$cpu_ms" ] && awk -v a="$cpu_ms" -v b="$c64" 'BEGIN {printf "  cpu64 / cpu speed: %.2fx\n", a / b}'
  fi
  for p in $peers; do
    label="torch $p"; [ "$p" = hf ] && label="transformers ($kind, sdpa)"
    [ "$p" = compile ] && label="torch.compile"
    row "$label" "$(median <"$T/$name.$p" 2>/dev/null)" "$tokens" "$ref" "$refname" "$T/$name.$p"
  done
done
exit $status
