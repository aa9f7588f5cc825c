#!/usr/bin/env bash
# The demo's save measurements: --save-plain (the state as plain files on a
# background thread, the floor of a durable asynchronous save) trains the
# same weights as a run saving into the store, keeps the last ten files of
# the state's size, and refuses what it is not for; a run with saves ends
# with its `save cycle` line, one without has none.
#   test_train_save_plain.sh TRAIN_BINARY
set -euo pipefail
train=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dims=32,384,192,8 # 32*384+384 + 384*192+192 + 192*8+8 parameters
params=$((32 * 384 + 384 + 384 * 192 + 192 + 192 * 8 + 8))
args=(--dims "$dims" --batch 64 --micro 3 --quiet)
run() { # NAME ARGS...
  local name=$1
  shift
  "$train" --dir "$work/$name" "${args[@]}" "$@" >"$work/$name.out" 2>&1 || { cat "$work/$name.out"; exit 1; }
}
digest() { grep '^weights digest:' "$work/$1.out" | awk '{print $3}'; }

run store --steps 96 --save-every 8
run plain --steps 96 --save-every 8 --save-plain
run none --steps 96 --save-every 0
cat "$work/plain.out"
[ "$(digest store)" = "$(digest plain)" ] && [ "$(digest store)" = "$(digest none)" ] ||
  { echo "saving changed the weights: $(digest store) $(digest plain) $(digest none)"; exit 1; }
grep -q '^save cycle: ' "$work/store.out" && grep -q '^save cycle: ' "$work/plain.out" ||
  { echo "a run with saves has no save cycle line"; exit 1; }
! grep -q '^save cycle: ' "$work/none.out" || { echo "a run without saves has a save cycle line"; exit 1; }
files=$(ls "$work/plain" | grep -c '^plain-.*\.bin$')
[ "$files" = 10 ] || { echo "--save-plain kept $files files of 12 saves, not 10"; exit 1; }
for f in "$work"/plain/plain-*.bin; do
  [ "$(stat -c %s "$f")" = $((3 * params * 4)) ] || { echo "$f: $(stat -c %s "$f") bytes, not the state's"; exit 1; }
done
[ ! -e "$work/plain/plain-1.bin" ] && [ -e "$work/plain/plain-11.bin" ] || { echo "not the last ten files kept"; exit 1; }

for bad in "--sync-save" "--dist"; do
  if "$train" --dir "$work/bad" "${args[@]}" --steps 8 --save-plain $bad >"$work/bad.out" 2>&1; then
    echo "--save-plain $bad was accepted"; exit 1
  fi
  grep -q -- '--save-plain is a measurement' "$work/bad.out" || { cat "$work/bad.out"; exit 1; }
done
if "$train" --resume "$work/store" "${args[@]}" --save-plain >"$work/bad.out" 2>&1; then
  echo "--save-plain --resume was accepted"; exit 1
fi
echo "ok: --save-plain trains the same weights ($(digest plain)) and keeps the last ten files"
