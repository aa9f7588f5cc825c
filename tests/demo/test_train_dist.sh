#!/usr/bin/env bash
# The demo job data-parallel (--dist) under mpirun: each step's micro-batches
# split over P ranks (aligned power-of-two ranges), the checkpointer in tree
# order reduced with gck_mpi_flush. The final weights must be those of the
# single-process run in tree order (--path checkpointer --reduce tree) for
# P = 1, 2, 3, 4, with 8 and 12 micro-batches per step; a job killed at P = 2
# (SIGKILL of one rank: the job dies) and resumed at P = 3 must reach them too.
# Also: the refusals (--dist with the trainer path, a split that cannot be
# made, resuming a sequential-order run with --dist).
#   test_train_dist.sh TRAIN_BINARY MPIEXEC
# With MPIEXEC "none" (a build without MPI): --dist is refused with a message.
set -euo pipefail
train=$1
mpiexec=$2
if [ "$mpiexec" = none ]; then
  if "$train" --dist --dir "${TMPDIR:-/tmp}/gck-train-dist-none.$$" --steps 1 --quiet >/dev/null 2>"${TMPDIR:-/tmp}/gck-train-dist.$$.err"; then
    echo "--dist was accepted by a build without MPI"; exit 1
  fi
  msg=$(cat "${TMPDIR:-/tmp}/gck-train-dist.$$.err"); rm -f "${TMPDIR:-/tmp}/gck-train-dist.$$.err"
  echo "$msg"
  [[ "$msg" == *"--dist needs the demo built with MPI"* ]] || exit 1
  [ ! -e "${TMPDIR:-/tmp}/gck-train-dist-none.$$" ] || { echo "the refused run created its store"; exit 1; }
  echo "ok"; exit 0
fi
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
export OMP_NUM_THREADS=1
mpi() { # NP ARGS...: the demo under mpirun on NP ranks
  local np=$1
  shift
  "$mpiexec" --oversubscribe -n "$np" "$train" --dist "$@"
}
digest() { grep '^weights digest:' | awk '{print $3}'; }
args=(--steps 6 --save-every 2 --dims 16,64,32,4 --batch 48 --quiet)

for K in 8 12; do
  want=$("$train" --dir "$work/one$K" --path checkpointer --reduce tree --micro "$K" "${args[@]}" | digest)
  seq=$("$train" --dir "$work/seq$K" --path checkpointer --micro "$K" "${args[@]}" | digest)
  [ -n "$want" ] || { echo "no digest from the one-process run"; exit 1; }
  # the order matters (so equal digests below say the split changed nothing)
  [ "$seq" != "$want" ] || { echo "K=$K: the sequential and tree orders gave the same weights"; exit 1; }
  for P in 1 2 3 4; do
    mpi "$P" --dir "$work/d$K.$P" --micro "$K" "${args[@]}" >"$work/d$K.$P.out" 2>&1 ||
      { cat "$work/d$K.$P.out"; exit 1; }
    got=$(digest <"$work/d$K.$P.out")
    split=$(sed -n 's/^data-parallel: .*micro-batches per rank: //p' "$work/d$K.$P.out")
    echo "K=$K P=$P (micro-batches per rank: $split): $got"
    [ "$got" = "$want" ] || { echo "K=$K P=$P: $got, one process in tree order: $want"; exit 1; }
  done
  echo "K=$K: P = 1..4 give the one-process tree-order weights $want (sequential order: $seq)"
done

# killed at P = 2 after a save, resumed at P = 3
# long enough that the job is still running 100 ms after its first save on a
# fast machine (60 steps had finished by then: "the killed job finished")
long=(--steps 240 --save-every 2 --dims 16,64,32,4 --batch 48 --micro 12 --quiet)
want=$("$train" --dir "$work/ref" --path checkpointer --reduce tree "${long[@]}" | digest)
saved() { grep -q '"version"' "$work/killed/manifest.json" 2>/dev/null; }
# mpiexec itself in the background (not through the function: a subshell), so that its children
# are the ranks
"$mpiexec" --oversubscribe -n 2 "$train" --dist --dir "$work/killed" "${long[@]}" >"$work/killed.out" 2>&1 &
job=$!
pids+=("$job")
for _ in $(seq 3000); do saved && break; sleep 0.01; done
saved || { cat "$work/killed.out"; echo "no version was saved"; exit 1; }
sleep "$(awk -v ms=$((RANDOM % 100)) 'BEGIN { printf "%.3f", ms / 1000 }')"
ranks=$(pgrep -P "$job" -x "$(basename "$train")" || true)
[ "$(echo "$ranks" | wc -w)" = 2 ] || { cat "$work/killed.out"; echo "not 2 ranks under mpiexec: '$ranks'"; exit 1; }
for p in $ranks; do pids+=("$p"); done
victim=$(echo "$ranks" | shuf -n 1)
kill -KILL "$victim"
rc=0
wait "$job" || rc=$?
[ "$rc" -ne 0 ] || { cat "$work/killed.out"; echo "the job exited 0 although a rank was killed"; exit 1; }
grep -q '^weights digest:' "$work/killed.out" && { echo "the killed job finished"; exit 1; }
for p in $ranks; do # the job's other rank goes with it
  for _ in $(seq 500); do kill -0 "$p" 2>/dev/null || break; sleep 0.01; done
  ! kill -0 "$p" 2>/dev/null || { echo "rank process $p outlived its job"; exit 1; }
done
mpi 3 --resume "$work/killed" "${long[@]}" >"$work/resumed.out" 2>&1 || { cat "$work/resumed.out"; exit 1; }
got=$(digest <"$work/resumed.out")
resumed=$(grep -E '^resumed at step [1-9][0-9]* from version [1-9][0-9]*$' "$work/resumed.out" || true)
echo "killed at P=2 (exit $rc), resumed at P=3 ($resumed): $got, uninterrupted: $want"
[ -n "$resumed" ] || { cat "$work/resumed.out"; echo "the run did not resume from a saved version"; exit 1; }
grep -q 'micro-batches per rank: 4 4 4$' "$work/resumed.out" || { cat "$work/resumed.out"; exit 1; }
[ "$got" = "$want" ] || { echo "the resumed run ended with different weights"; exit 1; }

# refusals
expect_fail() { # PATTERN CMD...: CMD fails and says PATTERN
  local pat=$1
  shift
  if "$@" >"$work/fail.out" 2>&1; then echo "accepted: $*"; exit 1; fi
  grep -q -- "$pat" "$work/fail.out" || { cat "$work/fail.out"; echo "no '$pat' from: $*"; exit 1; }
}
expect_fail '--dist takes the checkpointer path' "$train" --dist --path trainer --dir "$work/x1" "${args[@]}"
expect_fail '--dist takes the checkpointer path' "$train" --dist --reduce sequential --dir "$work/x1" "${args[@]}"
expect_fail 'cannot be split over 2 ranks' mpi 2 --dir "$work/x2" --micro 7 "${args[@]}"
expect_fail 'cannot be split over 4 ranks' mpi 4 --dir "$work/x3" --micro 3 "${args[@]}"
expect_fail '--dist needs a run started with --dist' mpi 2 --resume "$work/seq12" --steps 8 --quiet
expect_fail '--reduce tree is the checkpointer path' "$train" --reduce tree --dir "$work/x4" "${args[@]}"
expect_fail "bad value 'pairwise' for --reduce" "$train" --path checkpointer --reduce pairwise --dir "$work/x4" "${args[@]}"
# a resumed run keeps its recorded order (the snapshot's train.reduce)
"$train" --resume "$work/one12" --reduce sequential --steps 8 --quiet >"$work/kept.out" 2>&1 || { cat "$work/kept.out"; exit 1; }
grep -q -- '--reduce ignored' "$work/kept.out" && grep -q '^summation order: tree' "$work/kept.out" ||
  { cat "$work/kept.out"; echo "the resumed run did not keep the tree order"; exit 1; }
echo "ok"
