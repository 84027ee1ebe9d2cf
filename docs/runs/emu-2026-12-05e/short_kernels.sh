# Short kernels on the emulated device: bench contention calibrate (one-worker
# runs) then budget and split at 1 and 3 workers under 16 GiB, simulated (4
# seeds) against the emulated device (README.md "Short kernels").
#   bash docs/runs/emu-2026-12-05e/short_kernels.sh   (K=build/cuzk, writes /tmp/edge;
#   DESIGNS and WORKERS, default budget,split and 1,3)
K=build/cuzk
D_=${DESIGNS:-budget,split} W_=${WORKERS:-1,3}
while IFS='|' read -r name flags; do
  D=/tmp/edge/$name; rm -rf $D; mkdir -p $D
  $K bench contention calibrate --backend emu $flags --runs 1 --dir $D/cal --name edge-$name > $D/cal.txt 2>&1 || { echo "$name cal failed"; continue; }
  $K bench contention --backend sim --profile $D/cal/profile.json --seeds 4 $flags --vram-limit 16GiB --workers $W_ --designs $D_ > $D/sim.txt 2>/dev/null
  $K bench contention --backend emu $flags --vram-limit 16GiB --workers $W_ --designs $D_ > $D/emu.txt 2>/dev/null
  paste <(awk '$2 ~ /^[0-9]$/ {print $1, $2, $3, $4}' $D/sim.txt) <(awk '$2 ~ /^[0-9]$/ {print $3, $4}' $D/emu.txt) | awk -v n=$name '{printf "%-8s %-8s w%s sim %8.2f %6s emu %8.2f %6s  %+5.1f %%\n", n, $1, $2, $3, $4, $5, $6, ($3/$5-1)*100}'
done <<'X'
k10|--items 30 --kernel 10ms --before 8ms --after 4ms --staged 1GiB --copy 256MiB --scratch 128MiB
k20|--items 30 --kernel 20ms --before 16ms --after 8ms --staged 1GiB --copy 256MiB --scratch 128MiB
k5|--items 30 --kernel 5ms --before 4ms --after 2ms --staged 1GiB --copy 256MiB --scratch 128MiB
X
