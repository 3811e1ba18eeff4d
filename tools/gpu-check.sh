#!/usr/bin/env bash
# tools/gpu-check.sh: one command for whoever has an NVIDIA GPU: builds the cuda backend, checks
# every op, every tiny scenario against its cpu baseline, determinism, and a GPT-2 124M benchmark.
#
# usage: tools/gpu-check.sh [--out FILE] [--harness EXE --bench EXE] [--device SPEC]
#                           [--seq N] [--batch N] [--steps N]
# Writes one report (default gpu-check-report.txt) with: the GPU and driver; `harness ops
# --device cuda` in test, grad and perf modes, and test mode under compute-sanitizer's memcheck
# and racecheck (when it is installed); `harness run scenarios/*tiny*.json --compare` on
# cuda against the committed cpu baselines; gpt2-tiny twice on cuda with identical losses;
# with two GPUs `mpirun -np 2 harness comm-check --comm nccl` and gpt2-tiny on 2 ranks over NCCL
# (twice: identical; and within tolerance of one rank), else why skipped; and tokens/s of
# GPT-2 124M (n_layer 12, n_embd 768, vocab 50257) trained by bench_train on cuda beside PyTorch
# eager (workloads/bench_gpt2_torch.py) on the same GPU in the same run, and a mid-size Llama
# (bench_llama) beside transformers' LlamaForCausalLM (tools/bench_llama_torch.py --device cuda).
# Without --harness it
# configures and builds build-gpu/ with -DHARNESS_CUDA=ON; --harness/--bench take prebuilt ones
# (a machine without the -dev packages). Python: $HARNESS_PYTHON, else python3 (needs torch
# and transformers; the benchmark's torch half is skipped, said so, without them).
# Exit: 0 when every check passed, 1 when one failed, 2 on a usage or build error or a machine
# without a GPU (said in one line).
set -u
cd "$(dirname "$0")/.."
OUT=gpu-check-report.txt; H=""; BENCH=""; DEV=cuda; SEQ=1024; BATCH=4; STEPS=10
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT="$2"; shift 2 ;;
    --harness) H="$2"; shift 2 ;;
    --bench) BENCH="$2"; shift 2 ;;
    --device) DEV="$2"; shift 2 ;;
    --seq) SEQ="$2"; shift 2 ;;
    --batch) BATCH="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) sed -n '4,5p' "$0" | sed 's/^# //' >&2; exit 2 ;;
  esac
done
PY="${HARNESS_PYTHON:-python3}"
failed=0
section() { printf '\n== %s\n' "$*" | tee -a "$OUT"; }
# step NAME CMD...: runs CMD, its output into the report, its status noted; a nonzero one fails
step() {
  local name="$1"; shift
  "$@" >"$OUT.tmp" 2>&1; local rc=$?
  cat "$OUT.tmp" >>"$OUT"
  printf '>> %s: exit %d\n' "$name" "$rc" | tee -a "$OUT"
  [ "$rc" = 0 ] || failed=1
  return "$rc"
}

: >"$OUT"
echo "gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)" | tee -a "$OUT"
section "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv >>"$OUT" 2>&1 ||
  echo "nvidia-smi: not available" >>"$OUT"
if [ "$DEV" = cuda ] && ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "no NVIDIA GPU on this machine (nvidia-smi lists none): nothing to check here; run it where one is" | tee -a "$OUT"
  exit 2
fi

if [ -z "$H" ]; then
  section "build (build-gpu, Release, HARNESS_CUDA=ON)"
  if ! cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DHARNESS_CUDA=ON >>"$OUT" 2>&1 ||
     ! cmake --build build-gpu -j"$(nproc)" --target harness bench_train bench_llama >>"$OUT" 2>&1; then
    echo "build failed; see $OUT" | tee -a "$OUT"; exit 2
  fi
  H=build-gpu/harness; BENCH=build-gpu/bench_train
fi
[ -n "$BENCH" ] || BENCH="$(dirname "$H")/bench_train"
section "devices"
step "harness devices" "$H" devices

section "ops --device $DEV --mode test"
step "ops test" "$H" ops --device "$DEV"
section "ops --device $DEV --mode grad"
step "ops grad" "$H" ops --device "$DEV" --mode grad
section "ops --device $DEV --mode perf (CUDA events)"
step "ops perf" "$H" ops --device "$DEV" --mode perf

section "compute-sanitizer: memcheck and racecheck over every op on $DEV"
# out-of-bounds accesses (memcheck) and shared-memory races (racecheck) in every kernel the ops
# launch, at the op checks' shapes; the sanitizer follows a wrapper script's exec
CS="$(command -v compute-sanitizer || true)"
[ -z "$CS" ] && [ -x /usr/local/cuda/bin/compute-sanitizer ] && CS=/usr/local/cuda/bin/compute-sanitizer
if [ -z "$CS" ]; then
  echo "skipped: no compute-sanitizer on the PATH or in /usr/local/cuda/bin" | tee -a "$OUT"
else
  step "memcheck ops" "$CS" --tool memcheck --error-exitcode 9 "$H" ops --device "$DEV"
  step "racecheck ops" "$CS" --tool racecheck --error-exitcode 9 "$H" ops --device "$DEV"
fi

section "tiny scenarios on $DEV against the committed cpu baselines"
DB="$(mktemp -d)"; trap 'rm -rf "$DB" "$OUT.tmp"' EXIT
step "run --compare" "$H" run scenarios/*tiny*.json --device "$DEV" --compare --db "$DB/compare.db" --quiet

section "determinism: gpt2-tiny twice on $DEV, every step's loss and grad norm"
det() {
  "$H" run scenarios/gpt2-tiny.json --device "$DEV" --db "$DB/det.db" --quiet || return 1
  "$H" run scenarios/gpt2-tiny.json --device "$DEV" --db "$DB/det.db" --quiet || return 1
  "$PY" - "$DB/det.db" <<'PYEOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
runs = [r[0] for r in db.execute("SELECT id FROM runs ORDER BY id")]
a, b = ([tuple(s) for s in db.execute(
    "SELECT step, loss, grad_norm FROM steps WHERE run_id = ? ORDER BY step", (r,))] for r in runs[-2:])
same = a == b and len(a) > 0
print(f"{len(a)} steps each; identical losses and grad norms: {'yes' if same else 'NO'}")
sys.exit(0 if same else 1)
PYEOF
}
step "determinism" det

section "multi-rank: NCCL (2 ranks, one GPU each)"
# two_rank_run: gpt2-tiny as world_size 2 under mpirun on cuda:0 and cuda:1, gradients reduced by
# NCCL in device memory; then the same twice more: its losses equal run to run (NCCL_ALGO and
# NCCL_PROTO fixed) and within the scenario's tolerance of one rank with twice the batch
two_rank_run() {
  local scn="$DB/dp2.json"
  sed -e 's|"world_size": 1|"world_size": 2|' -e 's|"batch_size": 8|"batch_size": 4|' \
      -e "s|\"data/corpus.txt\"|\"$PWD/scenarios/data/corpus.txt\"|" \
      scenarios/gpt2-tiny.json >"$scn" || return 1
  "$H" run scenarios/gpt2-tiny.json --device "$DEV" --db "$DB/dp.db" --quiet || return 1
  for i in 1 2; do
    $MPIRUN -np 2 "$H" run "$scn" --device cuda --comm nccl --db "$DB/dp.db" --quiet || return 1
  done
  "$PY" - "$DB/dp.db" <<'PYEOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
steps = lambda r: [tuple(s) for s in db.execute(
    "SELECT step, loss, grad_norm FROM steps WHERE run_id = ? ORDER BY step", (r,))]
one, a, b = steps(1), steps(2), steps(3)
same = a == b and len(a) > 0
close = len(one) == len(a) and all(abs(x[1] - y[1]) <= 1e-4 * abs(x[1]) + 1e-6 and
                                   abs(x[2] - y[2]) <= 1e-3 * abs(x[2]) + 1e-6
                                   for x, y in zip(one, a))
print(f"{len(a)} steps; NCCL runs identical to each other: {'yes' if same else 'NO'}; "
      f"within 1e-4 (loss) / 1e-3 (grad norm) of one rank x batch 8: {'yes' if close else 'NO'}")
sys.exit(0 if same and close else 1)
PYEOF
}
ngpu="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')"
MPIRUN="mpirun"
[ "$(id -u)" = 0 ] && MPIRUN="mpirun --allow-run-as-root"
if ! "$H" comm-check --help 2>/dev/null | grep -q "^Communicators in this build: .*nccl"; then
  echo "skipped: this harness has no NCCL communicator (build with NCCL and MPI found:" \
       "-DHARNESS_NCCL=ON; docs/ranks.md)" | tee -a "$OUT"
elif ! command -v mpirun >/dev/null; then
  echo "skipped: no mpirun (Open MPI) to start 2 ranks" | tee -a "$OUT"
elif [ "${ngpu:-0}" -lt 2 ]; then
  echo "skipped: nvidia-smi -L lists ${ngpu:-0} GPU(s); the 2-rank NCCL run needs 2" | tee -a "$OUT"
  step "comm-check --comm nccl, one rank" "$H" comm-check --comm nccl --sizes 8B:64M \
    --db "$DB/comm.db"
else
  step "mpirun -np 2 comm-check --comm nccl" $MPIRUN -np 2 "$H" comm-check --comm nccl \
    --sizes 8B:256M --db "$DB/comm.db"
  step "2-rank NCCL training (gpt2-tiny)" two_rank_run
fi

section "benchmark: GPT-2 124M (n_layer 12, n_embd 768, n_head 12, vocab 50257, seq $SEQ, batch $BATCH), fp32, dropout 0"
ARGS=(--layers 12 --embd 768 --heads 12 --seq "$SEQ" --batch "$BATCH" --vocab 50257 --steps "$STEPS")
# dropout 0 on both sides, as workloads/bench_gpt2_torch.py builds its model
step "bench_train on $DEV" "$BENCH" --device "$DEV" "${ARGS[@]}" --dropout 0
harness_tps="$(grep -oE 'tokens/s +[0-9.]+' "$OUT.tmp" | awk '{print $2}')"
torch_line=""
if "$PY" -c 'import torch, transformers; assert torch.cuda.is_available()' 2>/dev/null; then
  for attn in eager sdpa; do
    step "torch eager ($attn attention)" "$PY" workloads/bench_gpt2_torch.py --attn "$attn" "${ARGS[@]}"
    tps="$(grep -oE 'tokens/s [0-9.]+' "$OUT.tmp" | awk '{print $2}')"
    torch_line="$torch_line$(printf '%-34s %12s tokens/s' "PyTorch eager, $attn attention" "${tps:-?}")"$'\n'
    [ "$attn" = eager ] && torch_eager_tps="$tps"
  done
else
  torch_line="PyTorch: skipped ($PY has no torch/transformers with CUDA)"$'\n'
fi
section "benchmark: Llama (n_layer 4, hidden 512, 8 heads / 4 kv heads, inter 1376, vocab 32000, seq 1024, batch 4), fp32"
LARGS=(--layers 4 --hidden 512 --heads 8 --kv-heads 4 --inter 1376 --vocab 32000 --seq 1024 --batch 4 --steps "$STEPS")
LBENCH="$(dirname "$BENCH")/bench_llama"
llama_line=""
if [ -x "$LBENCH" ]; then
  step "bench_llama on $DEV" "$LBENCH" --device "$DEV" "${LARGS[@]}"
  llama_tps="$(grep -oE 'tokens/s +[0-9.]+' "$OUT.tmp" | head -1 | awk '{print $2}')"
  llama_line="$(printf '%-34s %12s tokens/s' "harness on $DEV (bench_llama)" "${llama_tps:-?}")"$'\n'
  if "$PY" -c 'import torch, transformers; assert torch.cuda.is_available()' 2>/dev/null; then
    for attn in eager sdpa; do
      step "transformers Llama ($attn attention)" "$PY" tools/bench_llama_torch.py --device cuda \
        --attn "$attn" "${LARGS[@]}"
      tps="$(grep -oE 'tokens/s +[0-9.]+' "$OUT.tmp" | awk '{print $2}')"
      llama_line="$llama_line$(printf '%-34s %12s tokens/s' "transformers Llama, $attn" "${tps:-?}")"$'\n'
    done
  fi
else
  llama_line="bench_llama: not found beside $BENCH, skipped"$'\n'
fi
section "summary"
{
  printf '%-34s %12s tokens/s\n' "harness on $DEV (bench_train)" "${harness_tps:-?}"
  printf '%s' "$torch_line"
  printf '%s' "$llama_line"
  if [ -n "${harness_tps:-}" ] && [ -n "${torch_eager_tps:-}" ]; then
    awk -v h="$harness_tps" -v t="$torch_eager_tps" 'BEGIN { printf "harness / PyTorch eager (eager attention): %.3f\n", h / t }'
  fi
  grep -E '^>> ' "$OUT" | sed 's/^>> /  /'
  [ "$failed" = 0 ] && echo "gpu-check: every check passed" || echo "gpu-check: a check FAILED"
} | tee -a "$OUT"
echo "report: $OUT"
exit "$failed"
