# The rows of runs/h100-2026-12-06e against the predictions made before them: for each call,
# every design at 2-4 workers, the card s/job and busy, the model s/job (10 / part/s, 16 seeds' mean)
# and busy, the error of the model against the card, OOMs/fallbacks (card; model: seed 1).
#   python3 docs/runs/h100-2026-12-06e/compare.py PREDICTED SUMMARY   (any one VRAM limit, or the whole card: runs/h100-2026-12-06f, h200-2026-12-06k too)
import re, sys
pred={}
for l in open(sys.argv[1]):
    m=re.match(r'(single|split-first|split-devsync|split|budget)\s+(\d)\s+([\d.]+)\s+\S+\s+\S+\s+([\d.]+).*OOM/fallbacks \(seed 1\) (\S+)',l)
    if m: pred[(m[1],int(m[2]))]=(10/float(m[3]),float(m[4]),m[5])
errs=[];bus=[];ooms=0
for l in open(sys.argv[2]):
    m=re.match(r'bench: (\S+) × (\d) workers, limit (?:[\d.]+ GiB|card): ([\d.]+) s, busy (\d+)%.*?(\d+) OOMs, (\d+) fallbacks',l)
    if not m or m[2]=='1': continue
    k=(m[1],int(m[2])); s=float(m[3]); b=int(m[4]); o=f"{m[5]}/{m[6]}"
    ps,pb,po=pred[k]; e=(ps-s)/s*100; errs.append(abs(e)); bus.append(abs(pb-b))
    ok=(o=="0/0")==(po=="0/0"); ooms+=ok
    print(f"| {k[0]} | {k[1]} | {s:.2f} | {ps:.2f} | {e:+.1f} % | {b} | {pb:.1f} | {o} | {po} |")
errs.sort(); n=len(errs)
med=(errs[n//2] if n%2 else (errs[n//2-1]+errs[n//2])/2)
print(f"rows {n}: median |err| {med:.1f} %, max {errs[-1]:.1f} %, within 5 %: {sum(e<=5 for e in errs)}; busy within 3: {sum(b<=3 for b in bus)} (max {max(bus):.1f}); OOM yes/no right: {ooms}")
