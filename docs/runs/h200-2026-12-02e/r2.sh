# Second call: r1 again with the teams sized right (r1's binary formed none: porep-sha's small
# groups took every core's place). The kernel library is r1's, carried.
set -u; C=.gpuprove-carry; t0=$(date +%s); R=/tmp/r2; mkdir -p $R/lib
say(){ echo "[$(( $(date +%s)-t0 )) s] $*" | tee -a $OUT/summary.txt; }
left(){ echo $(( ${1} - ($(date +%s)-t0) )); }
for f in cuzk circuits.test libcuzkgpu.so; do [ -f $C/$f.gz ] && gunzip -f $C/$f.gz; done; chmod +x $C/*; K=$PWD/$C/cuzk
say "$($K version | head -1); nproc $(nproc); $(lscpu | grep -E '^(Model name|Thread|Core|Socket|NUMA node\(s\))' | tr -s ' ' | tr '\n' ';')"
for teams in on off; do
  (cd circuits && CUZK_SOLVE_TEAMS=$teams CUZK_SOLVE_LOGS=20,22 timeout $(left 150) $OLDPWD/$C/circuits.test -test.run - -test.bench 'SolvePoRepSHA|SolvesAhead' -test.benchtime 10x > $R/solve-teams-$teams.txt 2>&1)
  say "solve benches, teams $teams: $?"; grep -E "^Benchmark" $R/solve-teams-$teams.txt >> $OUT/summary.txt
done
export CUZK_GPU_LIB=$PWD/$C/libcuzkgpu.so
for run in on-j1a off-j1 on-j1b on-j4; do
  jobs=1; [ $run = on-j4 ] && jobs=4
  CUZK_SOLVE_TEAMS=${run%%-*} timeout $(left 560) $K bench prove --backend gpu --circuit porep-sha --sizes 1M,4M --keys memory --designs budget,split-first,split --workers 3 --jobs $jobs --vram-limits 0 --gnark-runs 0 --partition-runs 1 --trace-dir $R/tr-$run > $R/$run.txt 2> $R/$run.err
  say "porep-sha 1M,4M w3 card, teams ${run%%-*}, jobs $jobs ($run): $?"; grep -E "^circuit|^one partition|^ +(design|budget|split)" $R/$run.txt >> $OUT/summary.txt
done
for f in $R/*.err; do grep -v "WRN\|INF\|verifier done\|streamed msm" $f | gzip > $f.gz; rm $f; done
gzip $R/tr-*/*.json $R/*.log 2>/dev/null; tar czf $OUT/r2.tgz -C $R --exclude lib .
cat $OUT/summary.txt
