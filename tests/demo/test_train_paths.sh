#!/usr/bin/env bash
# The demo job's two gradient paths do the same arithmetic when the trainer
# path's clip eps is 0 (the checkpointer clips by clip / norm when norm >
# clip; gck_tensors_clip_by_norm by clip / (norm + eps) when that is < 1), so
# they must reach the same weights bit for bit: with clipping firing on some
# steps and not others at eps 0, and with clipping never firing at the
# default eps. With clipping firing at the default eps (1e-6) the factors
# differ, and so, in general, do the weights (reported, not asserted).
#   test_train_paths.sh TRAIN_BINARY
set -euo pipefail
train=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
read -r dims batch <<<"${GCK_TEST_TRAIN_MODEL:-32,384,192,8 64}" # smaller in slow builds
args=(--steps 40 --save-every 10 --dims "$dims" --batch "$batch" --micro 3 --quiet)
export OMP_NUM_THREADS=1 # thread counts are test_train_resume's; this is about the arithmetic
run() { # NAME ARGS...: runs a fresh job, leaves its output in $work/NAME.out
  local name=$1
  shift
  "$train" --dir "$work/$name" "${args[@]}" "$@" >"$work/$name.out" 2>&1 || { cat "$work/$name.out"; exit 1; }
}
digest() { grep '^weights digest:' "$work/$1.out" | awk '{print $3}'; }
fired() { sed -n 's/^clipping fired on \([0-9]*\) of \([0-9]*\) steps.*/\1/p' "$work/$1.out"; }

run ckpt --path checkpointer
run eps0 --path trainer --clip-eps 0
n=$(fired ckpt)
echo "clip 1.0: clipping fired on $n of 40 steps; checkpointer $(digest ckpt), trainer eps 0 $(digest eps0)"
[ "$n" -gt 0 ] && [ "$n" -lt 40 ] || { echo "the test needs clipping to fire on some steps, not all"; exit 1; }
[ "$(fired eps0)" = "$n" ] || { echo "the trainer path clipped on $(fired eps0) steps"; exit 1; }
[ "$(digest ckpt)" = "$(digest eps0)" ] || { echo "the paths differ with the same arithmetic"; exit 1; }

run ckpt_noclip --path checkpointer --clip 1e30
run trainer_noclip --clip 1e30
echo "clip never fires: checkpointer $(digest ckpt_noclip), trainer (eps 1e-6) $(digest trainer_noclip)"
[ "$(fired trainer_noclip)" = 0 ] || { echo "clipping fired with --clip 1e30"; exit 1; }
[ "$(digest ckpt_noclip)" = "$(digest trainer_noclip)" ] || { echo "the paths differ without clipping"; exit 1; }

run trainer
echo "clip 1.0, trainer path at the default eps 1e-6: $(digest trainer)" \
  "($([ "$(digest trainer)" = "$(digest ckpt)" ] && echo same as || echo differs from) the checkpointer path)"

# bf16 gradients: the same arithmetic on both paths again (each value widened exactly), and not the
# f32 run's weights (the rounding is real)
run ckpt_bf16 --path checkpointer --grad-dtype bf16
run eps0_bf16 --path trainer --clip-eps 0 --grad-dtype bf16
echo "bf16 gradients: checkpointer $(digest ckpt_bf16), trainer eps 0 $(digest eps0_bf16)"
grep -q '^gradient dtype: bf16 ' "$work/ckpt_bf16.out" || { cat "$work/ckpt_bf16.out"; exit 1; }
[ "$(digest ckpt_bf16)" = "$(digest eps0_bf16)" ] || { echo "the paths differ with bf16 gradients"; exit 1; }
[ "$(digest ckpt_bf16)" != "$(digest ckpt)" ] || { echo "bf16 gradients gave the f32 run's weights"; exit 1; }

# how and whether snapshots are saved does not change the arithmetic
run ckpt_sync --path checkpointer --sync-save
run ckpt_nosave --path checkpointer --save-every 0
[ "$(digest ckpt_sync)" = "$(digest ckpt)" ] || { echo "synchronous saves changed the weights"; exit 1; }
[ "$(digest ckpt_nosave)" = "$(digest ckpt)" ] || { echo "--save-every 0 changed the weights"; exit 1; }
grep -q "^store '.*': 0 versions" "$work/ckpt_nosave.out" || { cat "$work/ckpt_nosave.out"; exit 1; }
grep -q "^store '.*': 4 versions" "$work/ckpt_sync.out" || { cat "$work/ckpt_sync.out"; exit 1; }
grep -q "^store '.*': 4 versions" "$work/ckpt.out" || { cat "$work/ckpt.out"; exit 1; }

# --clip-eps belongs to the trainer path; a resumed run keeps its recorded path
if "$train" --dir "$work/bad" --path checkpointer --clip-eps 1e-6 "${args[@]}" >/dev/null 2>"$work/bad.err"; then
  echo "--path checkpointer --clip-eps 1e-6 was accepted"; exit 1
fi
grep -q 'clip-eps' "$work/bad.err" || { cat "$work/bad.err"; exit 1; }
"$train" --resume "$work/ckpt" --path trainer --steps 44 --quiet >"$work/resumed.out" 2>&1
grep -q '^gradient path: checkpointer ' "$work/resumed.out" && grep -q -- '--path trainer ignored' "$work/resumed.out" ||
  { cat "$work/resumed.out"; exit 1; }
# ... and its recorded gradient dtype
"$train" --resume "$work/ckpt_bf16" --grad-dtype f32 --steps 44 --quiet >"$work/resumed_bf16.out" 2>&1
grep -q '^gradient dtype: bf16 ' "$work/resumed_bf16.out" && grep -q -- '--grad-dtype f32 ignored' "$work/resumed_bf16.out" ||
  { cat "$work/resumed_bf16.out"; exit 1; }
echo "ok"
