#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job: the demo training
# run (examples/train, about a minute on 2 cores) with snapshots in a
# versioned store; it is killed once with SIGKILL partway and resumed from the
# latest snapshot, then the gradckpt tool lists, verifies and inspects what
# it saved. Output goes to ./run-output (GCK_RUN_DIR). Extra arguments go to
# the demo (e.g. --steps 200, or --path checkpointer for the checkpointer
# path instead of the in-place trainer path; see examples/train --help).
# Progress lines show the gradient norm before clipping ("grad_norm") and,
# when clipping fired, its factor ("clipped x0.42").
set -euo pipefail
cd "$(dirname "$0")/.."
GCK_SETUP_CROSS=0 GCK_SETUP_PLOTS=1 GCK_SETUP_PYTHON=0 bash scripts/setup.sh
dir=${GCK_BUILD_ROOT:-build}/release
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRADCKPT_BUILD_TESTS=OFF >/dev/null
cmake --build "$dir" -j "$(nproc)" >/dev/null
train=$dir/examples/train
cli=$dir/tools/gradckpt
out=${GCK_RUN_DIR:-run-output}
rm -rf "$out"
mkdir -p "$out"

"$cli" info
echo
echo "==> training; it will be killed with SIGKILL after ${GCK_KILL_AFTER:-20} s"
"$train" --dir "$out/store" "$@" &
pid=$!
sleep "${GCK_KILL_AFTER:-20}"
if kill -KILL "$pid" 2>/dev/null; then
  wait "$pid" 2>/dev/null || true
  echo
  echo "==> killed (pid $pid); resuming from the latest snapshot in $out/store"
else
  wait "$pid" || true
  echo "==> the run had already finished; resuming is a no-op"
fi
"$train" --resume "$out/store" --plot "$out/loss.png" "$@"
echo
echo "==> gradckpt store ls $out/store"
"$cli" store ls "$out/store"
echo
echo "==> gradckpt verify $out/store"
"$cli" verify "$out/store"
echo
echo "==> gradckpt store restore $out/store best $out/best.safetensors"
"$cli" store restore "$out/store" best "$out/best.safetensors"
echo
echo "==> gradckpt inspect $out/best.safetensors"
"$cli" inspect "$out/best.safetensors"
