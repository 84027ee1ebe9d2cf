#!/usr/bin/env bash
# One GPU versus two on a two-GPU machine, from the repository root, with the
# binaries in $C: first the simulator's predictions for the same runs (the
# scenario files in PREDICT), then RUNS alternations of one job on device 0
# and on devices 0,1, then JOB_RUNS alternations of JOBS jobs at once. Each run
# is a fresh cuzk prove; its JSON and metrics summary are kept. $OUT gets
# summary.txt (one line per run: wall, proofs verified, GPU busy per device)
# and runs.tgz.
#   SIZE (1M); CIRCUIT (mimc); DESIGN (single); WORKERS (3); RUNS (3);
#   JOBS (3); JOB_RUNS (2); PREDICT (space-separated scenario files);
#   PROFILE=1 adds a CPU profile of every run (<run>.prof in runs.tgz).
set -u
C=$(cd "${C:-.gpuprove-carry}" && pwd)
OUT=${OUT:-/tmp/cuzk-two-gpus}
R=$(mktemp -d)
mkdir -p "$OUT"
for f in cuzk libcuzkgpu.so; do
	[ -f "$C/$f.gz" ] && gunzip -c "$C/$f.gz" > "$C/$f" && chmod +x "$C/$f"
	[ -f "$C/$f.xz" ] && xz -dc "$C/$f.xz" > "$C/$f" && chmod +x "$C/$f"
done
export CUZK_GPU_LIB=$C/libcuzkgpu.so
S="$R/summary.txt"
"$C/cuzk" version | tee -a "$S"
echo "== prediction (simulator), before the hardware runs" | tee -a "$S"
for f in ${PREDICT:-}; do "$C/cuzk" sim --scenario "$f" | grep -E "^(scenario|throughput|GPU busy)" | tee -a "$S"; done
"$C/cuzk" setup --circuit "${CIRCUIT:-mimc}" --constraints "${SIZE:-1M}" --keys /tmp/cuzk-keys --keygen gpu 2>&1 | tail -1 | tee -a "$S"
P="--backend gpu --circuit ${CIRCUIT:-mimc} --constraints ${SIZE:-1M} --keys /tmp/cuzk-keys --partitions 10 --json --out /tmp/cuzk-proofs --workers ${WORKERS:-3} --design ${DESIGN:-single}"
line() { # name file: wall, proofs verified, busy per device
	echo "$1 wall_ms $(grep '"total_wall_ms"' "$2.json" | tail -1 | tr -dc '0-9.') verified $(grep -E '"proved": [0-9]+' "$2.json" | tr -dc '0-9\n' | awk '{s+=$1} END {print s}') busy $(grep -E '^ +[0-9]+ +[0-9.]+%' "$2.err" | awk '{print $1":"$2}' | tr '\n' ' ')" | tee -a "$S"
}
one() { # name devices extra-flags
	prof=""; [ "${PROFILE:-0}" = 1 ] && prof="--cpuprofile $R/$1.prof"
	"$C/cuzk" $prof prove $P --devices "$2" $3 > "$R/$1.json" 2> "$R/$1.err"
	line "$1 rc $?" "$R/$1"
}
for r in $(seq 1 "${RUNS:-3}"); do one "j1-d0-r$r" 0 ""; one "j1-d01-r$r" 0,1 ""; done
for r in $(seq 1 "${JOB_RUNS:-2}"); do one "j${JOBS:-3}-d0-r$r" 0 "--jobs ${JOBS:-3}"; one "j${JOBS:-3}-d01-r$r" 0,1 "--jobs ${JOBS:-3}"; done
cp "$S" "$OUT/summary.txt"
tar czf "$OUT/runs.tgz" -C "$R" .
