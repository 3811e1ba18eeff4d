#!/usr/bin/env bash
# tests/test_ranks_agree.sh: what the ranks of a data-parallel run sum and must agree on: MoE
# routing counts summed over the ranks, an unlabelled micro-batch of rank 1 named, the ranks'
# input files and comm-check's options compared; a rank that stops alone (--help, a usage
# error, a --comm refused) tells the others, which stop with exit 2 instead of waiting for ever.
# usage: test_ranks_agree.sh HARNESS_EXE SOURCE_DIR (skipped, 77, without mpirun or an MPI build)
set -u
H="$1"; SRC="$2"
. "$(dirname "$0")/lib.sh"
command -v mpirun >/dev/null || { echo "SKIP: no mpirun (Debian: openmpi-bin)"; exit 77; }
command -v sqlite3 >/dev/null || { echo "SKIP: no sqlite3"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# Open MPI's dlopen'ed components leak at MPI_Finalize (test_mpi.sh): no leak check under ASan.
# The timeout bounds every case: a rank left waiting for ever shows as exit 124.
MPI="timeout $((120 * SLOW)) mpirun -np 2 -x ASAN_OPTIONS=detect_leaks=0"
CT="--comm-timeout $((20 * SLOW))"
$MPI "$H" comm-check --sizes 8B:8B --op allreduce --iters 1 --db "$T/probe.db" >/dev/null 2>"$T/probe"
if grep -q "no MPI communicator" "$T/probe"; then echo "SKIP: harness built without MPI"; exit 77; fi

# rank1.sh OPTS CMD...: CMD on every rank, with OPTS (split at spaces) added on rank 1 only
cat >"$T/rank1.sh" <<'WRAP'
opts="$1"; shift
if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then exec "$@" $opts; else exec "$@"; fi
WRAP
# per_rank.sh CMD DIR ARGS...: `CMD run DIR/rRANK/s.json ARGS...`: each rank its own folder
cat >"$T/per_rank.sh" <<'WRAP'
exec "$1" run "$2/r$OMPI_COMM_WORLD_RANK/s.json" "${@:3}"
WRAP

# shaped SOURCE NAME BATCH WORLD STEPS: a shipped scenario with those
shaped() {
  sed -e "s|\"data/corpus.txt\"|\"$SRC/scenarios/data/corpus.txt\"|" -e "s|\"batch_size\": 8|\"batch_size\": $3|" \
      -e "s|\"steps\": 40|\"steps\": $5|" -e "s|\"world_size\": 1|\"world_size\": $4|" \
      "$SRC/scenarios/$1.json" >"$T/$2.json"
}

echo "MoE routing: the counts of every rank are summed, as the step's tokens are"
shaped mixtral-tiny moe14 4 1 3; shaped mixtral-tiny moe22 2 2 3
k=$(sed -n 's/.*"num_experts_per_tok": *\([0-9]*\).*/\1/p' "$SRC/scenarios/mixtral-tiny.json")
expect 0 "mixtral 1 rank x batch 4" -- "$H" run "$T/moe14.json" --db "$T/moe.db" --quiet
expect 0 "mixtral np 2 x batch 2" -- $MPI "$H" run "$T/moe22.json" --db "$T/moe.db" --quiet $CT
# step 1 trains on the same 4 samples from the same weights: the same routing, count for count
rows() { sqlite3 "$T/moe.db" "select layer, expert, tokens from expert_tokens where run_id=$1 and step=1 order by layer, expert"; }
[ -n "$(rows 1)" ] && [ "$(rows 1)" = "$(rows 2)" ] && pass ||
  { fail "step 1's expert counts: np 2 x 2 differs from 1 x 4"; paste <(rows 1) <(rows 2) | head -8; }
# every step of both runs: each layer's counts sum to k x the tokens the step records
bad=$(sqlite3 "$T/moe.db" "select e.run_id, e.step, e.layer, sum(e.tokens), s.tokens from expert_tokens e
      join steps s on s.run_id = e.run_id and s.step = e.step group by e.run_id, e.step, e.layer
      having sum(e.tokens) != $k * s.tokens")
[ -z "$bad" ] && [ -n "$k" ] && pass || fail "a layer's counts are not $k x the step's tokens (run|step|layer|sum|tokens): $bad"

echo "an SFT micro-batch without labels on rank 1 is named"
bpe="$SRC/tests/data/hf/bpe512/tokenizer.json"
long=$(for i in $(seq 80); do printf 'word%d and ' "$i"; done)
{ printf '{"instruction": "Name a colour.", "output": "Blue."}\n'
  printf '{"instruction": "%s", "output": "Never seen."}\n' "$long"; } >"$T/ab.jsonl"
cat >"$T/sft2.json" <<EOF
{"name": "sft2", "model": {"family": "gpt2", "config": {"vocab_size": 512, "n_positions": 256,
   "n_embd": 32, "n_layer": 2, "n_head": 4, "attn_pdrop": 0, "embd_pdrop": 0, "resid_pdrop": 0}},
 "data": {"format": "alpaca", "path": "$T/ab.jsonl", "tokenizer": "bpe", "tokenizer_path": "$bpe",
   "seq_len": 240, "model_max_length": 200, "eos_token": "<|endoftext|>", "pad_token": "eos"},
 "train": {"steps": 3, "batch_size": 1, "lr": 1e-3, "seed": 3}, "world_size": 2}
EOF
# rank 0 takes record 0 (labelled), rank 1 record 1 (all prompt): the mean loss is NaN
expect 1 "np 2, rank 1's record unlabelled" -- $MPI "$H" run "$T/sft2.json" --db "$T/sft.db" $CT
err=$(sqlite3 "$T/sft.db" "select status || ': ' || error from runs")
case "$err" in diverged:*"at step 1: micro-batch 1 of rank 1 has every label -100"*) pass ;;
  *) fail "the run does not name rank 1's unlabelled micro-batch: '$err'" ;; esac

echo "ranks given different input files (the same scenario JSON): exit 2, naming the rank and file"
for r in 0 1; do
  mkdir -p "$T/d/r$r"
  cp "$SRC/scenarios/data/corpus.txt" "$T/d/r$r/corpus.txt"
  printf '{"vocab_size": 256, "n_positions": 128, "n_embd": 64, "n_layer": 2, "n_head": 4, "layer_norm_epsilon": 1e-5}\n' >"$T/d/r$r/config.json"
  cat >"$T/d/r$r/s.json" <<'EOF'
{"name": "per-rank", "model": {"family": "gpt2", "config_path": "config.json"},
 "data": {"path": "corpus.txt", "tokenizer": "byte", "seq_len": 64},
 "train": {"steps": 2, "batch_size": 4, "lr": 1e-3, "seed": 1}, "world_size": 2}
EOF
done
expect 0 "np 2, each rank its own copy of the same files" -- $MPI bash "$T/per_rank.sh" "$H" "$T/d" --db "$T/same.db" --quiet $CT
printf 'one line more on rank 1\n' >>"$T/d/r1/corpus.txt"
expect 2 "np 2, rank 1's data file differs" -- $MPI bash "$T/per_rank.sh" "$H" "$T/d" --db "$T/none.db" --quiet $CT
says "data.path: rank 1's file differs from rank 0's $T/d/r0/corpus.txt"
cp "$T/d/r0/corpus.txt" "$T/d/r1/corpus.txt"
sed -i 's/1e-5/1e-6/' "$T/d/r1/config.json"
expect 2 "np 2, rank 1's config_path file differs" -- $MPI bash "$T/per_rank.sh" "$H" "$T/d" --db "$T/none.db" --quiet $CT
says "model.config_path: rank 1's file differs from rank 0's $T/d/r0/config.json"
[ ! -e "$T/none.db" ] && pass || fail "ranks with different input files created the store"

echo "a rank that stops alone tells the others: exit 2 on every rank, never a wait for ever"
shaped gpt2-tiny two4 4 2 2; shaped gpt2-tiny one8 8 1 2
expect 2 "run --help on rank 1 only" -- $MPI bash "$T/rank1.sh" --help "$H" run "$T/two4.json" --db "$T/none.db" --quiet $CT
says "rank 1 stopped before the run (its message says why)"
expect 2 "run, an unknown option on rank 1 only" -- $MPI bash "$T/rank1.sh" --bogus "$H" run "$T/two4.json" --db "$T/none.db" --quiet $CT
says "unknown option or missing value: --bogus"
says "rank 1: run: unknown option or missing value: --bogus" # its own usage error names its rank
expect 2 "run --comm nccl on rank 1 only (--device cpu)" -- $MPI bash "$T/rank1.sh" "--comm nccl" "$H" run "$T/two4.json" --db "$T/none.db" --quiet $CT
says "rank 1: run: --comm nccl"
cat >"$T/world_by_rank.sh" <<WRAP
if [ "\$OMPI_COMM_WORLD_RANK" = 1 ]; then exec "\$1" run "$T/one8.json" "\${@:4}"; else exec "\$@"; fi
WRAP
expect 2 "run, rank 1 given a scenario of world_size 1" -- $MPI bash "$T/world_by_rank.sh" "$H" run "$T/two4.json" --db "$T/none.db" --quiet $CT
says "rank 1: $T/one8.json: world_size 1, but mpirun started 2 ranks"
says "rank 1 stopped before the run"
[ ! -e "$T/none.db" ] && pass || fail "a rank that stopped alone let the store be created"
expect 2 "comm-check --help on rank 1 only" -- $MPI bash "$T/rank1.sh" --help "$H" comm-check --sizes 8B:1K --db "$T/cc.db" $CT
says "comm-check: rank 1 stopped before the check (its message says why)"
cat >"$T/fault_on_rank1.sh" <<'WRAP'
if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then exec env HARNESS_COMM_FAULT=7 "$@"; else exec "$@"; fi
WRAP
expect 2 "comm-check, HARNESS_COMM_FAULT=7 on rank 1 only" -- $MPI bash "$T/fault_on_rank1.sh" "$H" comm-check --sizes 8B:1K --db "$T/cc.db" $CT
says "rank 1: comm-check: HARNESS_COMM_FAULT=7 names no rank of this world of 2"

echo "comm-check: a rank given other options than rank 0: exit 2 naming the rank and the option"
for opt in "--values float" "--iters 3" "--warmup 0" "--sizes 8B:16B" "--op allgather"; do
  expect 2 "comm-check, $opt on rank 1 only" -- $MPI bash "$T/rank1.sh" "$opt" "$H" comm-check --sizes 8B:1K --db "$T/cc.db" $CT
  says "comm-check: rank 1 was given ${opt%% *}"
done
# --comm nccl on rank 1: with NCCL in the build the ranks' --comm differ; without it rank 1
# refuses it alone and says so. Either way every rank stops with exit 2
expect 2 "comm-check, --comm nccl on rank 1 only" -- $MPI bash "$T/rank1.sh" "--comm nccl" "$H" comm-check --sizes 8B:1K --db "$T/cc.db" $CT
grep -qE "rank 1 was given --comm nccl|rank 1: comm-check: --comm nccl" "$T/err" && pass ||
  fail "comm-check --comm nccl on rank 1: not named: $(head -3 "$T/err")"
[ ! -e "$T/cc.db" ] && pass || fail "comm-check with ranks given other options created the store"
finish
