# Every porep-sha 2^26 row run under a VRAM limit on the H100 (runs/h100-2026-12-06e to h,
# 16-28 GiB, 135 rows), re-predicted from the same profiles and scenarios with the keys'
# streaming on the copy engine (partition.stream_gib: the 28.06 GiB of key points each
# plan printed as "on the host (pinned), streamed"), against the card and against the
# predictions first made. The profiles and scenarios are those committed; only stream_gib
# is added to each profile. Prints compare.py's line for each call, before and after.
#   K=build/cuzk bash docs/runs/h100-2026-12-06h/restream.sh
set -eu
K=${K:-build/cuzk}; P=docs/predictions; R=docs/runs; T=$(mktemp -d)
cmp=$R/h100-2026-12-06e/compare.py
# label, scenario, predictions first made, card summary, profile (when not the scenario's)
while read -r label job first card prof; do
  src=${prof:-$(sed -nE 's/.*"profile": "([^"]*)".*/\1/p' $job)}
  python3 -c "import json,sys; p=json.load(open(sys.argv[1])); p['partition']['stream_gib']=28.06; json.dump(p,open(sys.argv[2],'w'),indent=1)" $src $T/$label-profile.json
  sed -E "s#\"profile\": \"[^\"]*\"#\"profile\": \"$T/$label-profile.json\"#" $job > $T/$label.json
  K=$K bash docs/runs/atsize/predicted.sh $T/$label.json > $T/$label-pred.txt
  echo "$label before: $(python3 $cmp $first $card | tail -1)"
  echo "$label after:  $(python3 $cmp $T/$label-pred.txt $card | tail -1)"
  python3 $cmp $T/$label-pred.txt $card | sed '$d' > $T/$label-rows.txt
done <<LIST
16g-1job-g54 $P/h100-porepsha64m-16g-w1cal-job.json $P/h100-porepsha64m-16g-w1cal-predicted.txt $R/h100-2026-12-06e/c1/summary.txt
16g-2jobs-g72 $P/h100-porepsha64m-16g-w1cal-jobs2-g72-job.json $P/h100-porepsha64m-16g-w1cal-jobs2-predicted.txt $R/h100-2026-12-06e/c2/summary.txt
16g-2jobs-g36 $P/h100-porepsha64m-16g-w1cal-jobs2-g36-job.json $P/h100-porepsha64m-16g-w1cal-jobs2-g36-predicted.txt $R/h100-2026-12-06e/c3/summary.txt
20g-1job-g54 $P/h100-porepsha64m-20g-w1cal-job.json $P/h100-porepsha64m-20g-w1cal-predicted.txt $R/h100-2026-12-06g/c1/summary.txt
20g-2jobs-g72 $P/h100-porepsha64m-20g-w1cal-jobs2-g72-job.json $P/h100-porepsha64m-20g-w1cal-jobs2-predicted.txt $R/h100-2026-12-06g/c2/summary.txt
24g-1job-g54 $P/h100-porepsha64m-24g-w1cal-job.json $P/h100-porepsha64m-24g-w1cal-predicted.txt $R/h100-2026-12-06f/c2/summary.txt
24g-2jobs-g72 $P/h100-porepsha64m-24g-w1cal-jobs2-g72-job.json $P/h100-porepsha64m-24g-w1cal-jobs2-predicted.txt $R/h100-2026-12-06f/c3/summary.txt
28g-1job-g54 $P/h100-porepsha64m-28g-w1cal-job.json $P/h100-porepsha64m-28g-w1cal-predicted.txt $R/h100-2026-12-06h/c1/summary.txt
28g-2jobs-g72 $P/h100-porepsha64m-28g-w1cal-jobs2-g72-job.json $P/h100-porepsha64m-28g-w1cal-jobs2-predicted.txt $R/h100-2026-12-06h/c2/summary.txt
LIST
cat $T/*-rows.txt | python3 -c "
import sys,re
e=sorted(abs(float(re.split(r'\s*\|\s*',l)[5].split()[0])) for l in sys.stdin if l.startswith('|'))
n=len(e); print(f'all {n} rows after: median |err| {(e[n//2] if n%2 else (e[n//2-1]+e[n//2])/2):.1f} %, max {e[-1]:.1f} %, within 5 %: {sum(x<=5 for x in e)}')"
rm -r $T
