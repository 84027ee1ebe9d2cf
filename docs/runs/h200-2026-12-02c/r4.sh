# Fourth call: cuzk prove on the GPU with 98c3fef's layouts (one vector for the A and B
# wires, the wires solved into the pinned staging) and the keys loaded from disk held for
# the device (system released, points pinned, the domain's tables dropped, the Go heap
# capped): porep-sha 2^22, 10 partitions, under 16 GiB.
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r4; mkdir -p $R
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
for f in cuzk libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
say "$($K version | head -1) $(sha256sum $K | cut -c1-16)"
timeout 150 /usr/bin/time -v $K prove --circuit porep-sha --constraints 4M --partitions 10 --backend gpu --key-tier pinned --vram-limit 16GiB --keys $R/k4 --setup-if-missing --out $R/p4 --store $R/s4 > $R/prove4m.txt 2> $R/prove4m.err; say "cuzk prove porep-sha 4M gpu pinned 16GiB: $?"
tail -n 25 $R/prove4m.txt >> $OUT/summary.txt; grep -E "notice|heap|Maximum resident|Elapsed|rror|panic" $R/prove4m.err | cut -c1-300 >> $OUT/summary.txt
timeout 60 $K verify --keys $R/k4/porep-sha-4194304 $R/p4/partition-*.proof > $R/verify.txt 2>&1; say "cuzk verify: $?"; tail -n 5 $R/verify.txt >> $OUT/summary.txt
cat $OUT/summary.txt
