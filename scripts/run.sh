#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job: for now, the
# kernel demo (detected ISA, every kernel once on a large array) and
# `gradckpt info`.
set -euo pipefail
cd "$(dirname "$0")/.."
GCK_SETUP_CROSS=0 bash scripts/setup.sh
dir=${GCK_BUILD_ROOT:-build}/release
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRADCKPT_BUILD_TESTS=OFF >/dev/null
cmake --build "$dir" -j "$(nproc)" >/dev/null
"$dir/tools/gradckpt" info
"$dir/examples/kernels_demo" "$@"
