# Sourced by a round's call scripts (docs/runs/<round>/rN.sh) on the device
# machine, from the repository root: unpacks the carried binaries
# (.gpuprove-carry/cuzk.gz, libcuzkgpu.so.gz), sets K to the cuzk binary and
# CUZK_GPU_LIB to the kernel library, and defines
#   say MESSAGE   a line with the seconds since the call began, printed and
#                 appended to $OUT/summary.txt;
#   left LIMIT    the seconds left of LIMIT since the call began (for timeout).
set -u
C=.gpuprove-carry
t0=$(date +%s)
say() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/summary.txt"; }
left() { echo $(( $1 - ($(date +%s) - t0) )); }
for f in cuzk libcuzkgpu.so; do [ -f "$C/$f.gz" ] && gunzip -f "$C/$f.gz"; done
chmod +x "$C"/*
K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
