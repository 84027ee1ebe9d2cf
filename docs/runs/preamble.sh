# Sourced by a round's call scripts (docs/runs/<round>/rN.sh) on the device
# machine, from the repository root: unpacks the carried binaries
# (.gpuprove-carry/cuzk.gz or .xz, libcuzkgpu.so.gz), builds the kernel library with
# `make cuda` when none was carried (about two minutes; a gzip of it is left
# in $OUT to carry to the next call), sets K to the cuzk binary and
# CUZK_GPU_LIB to the kernel library, and defines
#   say MESSAGE   a line with the seconds since the call began, printed and
#                 appended to $OUT/summary.txt;
#   left LIMIT    the seconds left of LIMIT since the call began (for timeout).
# A call brings back a limited number of files from $OUT: put many files
# (tables, traces) in one archive there (runs/h200-2026-12-05's racing.sh wrote
# a table per draw to $OUT and got back the first draw's only). A machine
# kept warm from call to call keeps /tmp too: write each call's files to a
# fresh directory (mktemp -d).
set -u
C=.gpuprove-carry
t0=$(date +%s)
say() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/summary.txt"; }
left() { echo $(( $1 - ($(date +%s) - t0) )); }
for f in cuzk libcuzkgpu.so; do [ -f "$C/$f.gz" ] && gunzip -f "$C/$f.gz"; [ -f "$C/$f.xz" ] && xz -df "$C/$f.xz"; done
chmod +x "$C"/*
K=$PWD/$C/cuzk
if [ ! -f "$C/libcuzkgpu.so" ]; then
	make cuda BUILD="$C" > "$OUT/nvcc.log" 2>&1
	say "make cuda: $? $(/usr/local/cuda/bin/nvcc --version | tail -1)"
	gzip -c "$C/libcuzkgpu.so" > "$OUT/libcuzkgpu.so.gz"
fi
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
