#!/usr/bin/env bash
# The demo job on one gradient path (trainer or checkpointer), killed with
# SIGKILL at random moments (mid-step, mid-save) and resumed each time, must
# end with the same weights as an uninterrupted run; so must runs on 1 and 3
# threads. The last run must resume from a version it restored (a run that
# silently started over would end with the same weights, since the data of
# every step comes from the seed). Saves are asynchronous unless the extra
# arguments say --sync-save; with --grad-dtype bf16 the run's gradients are
# bf16, and the resumed run must keep them without being told.
#   test_train_resume.sh TRAIN_BINARY [trainer|checkpointer] [EXTRA ARGS...]
#   GCK_TEST_TRAIN_MODEL="DIMS BATCH": a smaller model for slow builds (the
#   sanitizer stage: every kill, resume and comparison is the same)
set -euo pipefail
train=$1
path=${2:-trainer}
extra=("${@:3}")
gdtype=f32
for ((i = 0; i + 1 < ${#extra[@]}; i++)); do [ "${extra[i]}" = --grad-dtype ] && gdtype=${extra[i + 1]}; done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
read -r dims batch <<<"${GCK_TEST_TRAIN_MODEL:-32,384,192,8 64}"
model=(--dims "$dims" --batch "$batch")
args=(--path "$path" --steps 60 --save-every 2 "${model[@]}" --micro 3 --quiet "${extra[@]}")
digest() { grep '^weights digest:' | awk '{print $3}'; }

t0=$(date +%s%N)
OMP_NUM_THREADS=2 "$train" --dir "$work/ref" "${args[@]}" >"$work/ref.out"
t1=$(date +%s%N)
run_ms=$(( (t1 - t0) / 1000000 ))
want=$(digest <"$work/ref.out")
[ -n "$want" ] || { echo "no digest from the reference run"; exit 1; }
grep -q "^gradient path: $path " "$work/ref.out" || { echo "the run did not take the $path path"; cat "$work/ref.out"; exit 1; }
grep -q "^gradient dtype: $gdtype" "$work/ref.out" || { echo "the run's gradients are not $gdtype"; cat "$work/ref.out"; exit 1; }
echo "$path path, $gdtype gradients ${extra[*]}, reference (2 threads): $want in ${run_ms} ms"

for threads in 1 3; do
  other=$(OMP_NUM_THREADS=$threads "$train" --dir "$work/t$threads" "${args[@]}" | digest)
  [ "$other" = "$want" ] || { echo "$threads threads gave $other, 2 threads $want"; exit 1; }
done
echo "1 and 3 threads: the same weights"

# kill at random points of the run, resuming each time
kills=0
first=(--dir "$work/killed")
saved() { grep -q '"version"' "$work/killed/manifest.json" 2>/dev/null; }
for round in 1 2 3 4 5 6; do
  window=$(( run_ms / 3 > 1 ? run_ms / 3 : 2 ))  # resumed runs have less left to do
  delay_ms=$(( 1 + RANDOM % window ))
  "$train" "${first[@]}" "${args[@]}" >"$work/out.$round" 2>&1 &
  pid=$!
  sleep "$(awk -v ms="$delay_ms" 'BEGIN { printf "%.3f", ms / 1000 }')"
  if kill -KILL "$pid" 2>/dev/null; then kills=$((kills + 1)); fi
  wait "$pid" 2>/dev/null || true
  # a kill before the first save leaves an empty store: the next round starts it again
  if saved; then
    first=(--resume "$work/killed")
  else
    rm -rf "$work/killed"
    first=(--dir "$work/killed")
  fi
done
# The last run always resumes from a saved version after at least one kill:
# when no kill landed after a save, one more run is killed right after its
# first save. (The rounds' delays come from the reference run's time, which a
# second test running beside this one can stretch tenfold: then every round
# may finish before its kill.)
if ! saved || [ "$kills" -eq 0 ]; then
  rm -rf "$work/killed"
  "$train" --dir "$work/killed" "${args[@]}" >"$work/out.last" 2>&1 &
  pid=$!
  for _ in $(seq 3000); do saved && break; sleep 0.01; done
  if kill -KILL "$pid" 2>/dev/null; then kills=$((kills + 1)); fi
  wait "$pid" 2>/dev/null || true
fi
saved || { echo "no version was saved"; exit 1; }
# resumed without --path or --grad-dtype: the run's path and gradient dtype come from its snapshot
resume_args=(--steps 60 --save-every 2 "${model[@]}" --micro 3 --quiet)
[[ " ${extra[*]} " == *" --sync-save "* ]] && resume_args+=(--sync-save)
"$train" --resume "$work/killed" "${resume_args[@]}" >"$work/final" 2>&1 || { cat "$work/final"; exit 1; }
got=$(digest <"$work/final")
resumed=$(grep -E '^resumed at step [0-9]+ from version [0-9]+$' "$work/final" || true)
echo "after $kills kills and resumes: $got ($resumed)"
[ "$kills" -ge 1 ] || { echo "no kill landed inside a run"; exit 1; }
grep -q "^gradient path: $path " "$work/final" || { echo "the resumed run changed path"; cat "$work/final"; exit 1; }
grep -q "^gradient dtype: $gdtype" "$work/final" || { echo "the resumed run changed gradient dtype"; cat "$work/final"; exit 1; }
# a resume that started over (step 0, no version) would reach the same weights too
[[ "$resumed" =~ ^resumed\ at\ step\ [1-9][0-9]*\ from\ version\ [1-9][0-9]*$ ]] ||
  { echo "the last run did not resume from a saved version: '$resumed'"; exit 1; }
[ "$got" = "$want" ] || { echo "resumed run ended with different weights"; exit 1; }
echo "ok"
