#!/usr/bin/env bash
# tests/mpi/kill_during_save.sh MPIEXEC TEST_MPI_SNAPSHOT - a rank SIGKILLed during a sharded save leaves the
# previous commit: commit A on 2 ranks; save B on 2 ranks with rank 1 killed in its shard's rename (its shard
# written and fsynced, rank 0's maybe too); then loads on 3, 1 and 4 ranks see A bit for bit; a new save on 3
# ranks commits and removes the dead save's shards.
set -u
mpiexec=$1 prog=$2
dir=$(mktemp -d /tmp/gck_mpi_kill_XXXXXX)
trap 'rm -rf "$dir"' EXIT
run() { # np, then the program's arguments; each run limited so a hang fails
    local np=$1
    shift
    timeout 120 "$mpiexec" --oversubscribe -np "$np" "$prog" "$@"
}
fail() { echo "FAIL: $*" >&2; exit 1; }

run 2 --save "$dir/snap" 11 || fail "first save"
run 2 --expect "$dir/snap" 11 || fail "load of the first commit"
GCK_TEST_KILL_RANK=1 run 2 --save "$dir/snap" 22 && fail "the save with rank 1 killed succeeded"
ls -a "$dir/snap"
# the kill came during the save: rank 1's shard of the new generation was written but not renamed
compgen -G "$dir/snap/.model-g2-00002-of-*.tmp.*" > /dev/null || fail "no temporary of rank 1's shard: not killed in its write"
for np in 3 1 4; do
    run "$np" --expect "$dir/snap" 11 || fail "load on $np ranks after the kill does not give the old commit"
done
run 3 --save "$dir/snap" 33 || fail "save after the kill"
run 2 --expect "$dir/snap" 33 || fail "load of the new commit"
shopt -s nullglob
left=("$dir"/snap/model-g[12]-*)
[ ${#left[@]} -eq 0 ] || fail "shards of old generations left: ${left[*]}"
now=("$dir"/snap/model-g3-*)
[ ${#now[@]} -eq 3 ] || fail "expected 3 shards of generation 3, found ${#now[@]}"
echo "PASS"
