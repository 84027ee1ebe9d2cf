# Each kernel of the rows' traces (runs/h100-2026-12-06h c1 or c2) against the time other
# partitions' staging copies overlapped it: a line through its duration against that
# overlap, for kernels whose partition was staged whole (beside a running kernel: it
# copies only its keys as it runs) and staged alone (it also copies the rest of its
# partition). The model's duty for the first is the keys' copy work over the kernel's
# time, 0.55 (docs/simulator.md, "Keys streamed through the copy engine").
#   tar xzf docs/runs/h100-2026-12-06h/c1/atsize.tgz -C C1; python3 docs/runs/h100-2026-12-06h/overlap.py C1/rows/trace-*.json.gz
import json,gzip,glob,sys,re
import statistics as st
rows=[]
for f in sys.argv[1:]:
    ev=json.load(gzip.open(f)); ev=ev['traceEvents'] if isinstance(ev,dict) else ev
    copies=[];comps=[];copied={}
    for e in ev:
        a=e.get('args',{})
        if e.get('name')=='copy_in' and e.get('ph')=='i':
            copies.append((e['ts']-a['took_us'],e['ts'],a['partition'],a.get('copied',a['bytes'])))
            copied[a['partition']]=a.get('copied',a['bytes'])
        if e.get('name')=='compute' and e.get('ph')=='X':
            comps.append((e['ts'],e['ts']+e['dur'],a['partition'],e['dur']))
    for s,t,p,d in comps:
        ov=sum(max(0,min(t,ce)-max(s,cs)) for cs,ce,cp,cb in copies if cp!=p)
        whole=copied.get(p,0)>5e9
        rows.append((re.search(r'trace-(.*?)-w(\d)',f).group(1,2),whole,ov/1e3,d/1e3))
import itertools
for whole in (False,True):
    sel=[r for r in rows if r[1]==whole]
    xs=[r[2] for r in sel]; ys=[r[3] for r in sel]
    n=len(sel)
    if n<3: continue
    mx=st.mean(xs); my=st.mean(ys)
    sxx=sum((x-mx)**2 for x in xs); sxy=sum((x-mx)*(y-my) for x,y in zip(xs,ys))
    b=sxy/sxx if sxx else 0
    print(f"staged {'whole' if whole else 'alone'}: n {n}, kernels with no overlap {sum(x==0 for x in xs)} mean {st.mean([y for x,y in zip(xs,ys) if x==0] or [0]):.1f} ms; with overlap {sum(x>0 for x in xs)} mean overlap {st.mean([x for x in xs if x>0] or [0]):.1f} ms mean dur {st.mean([y for x,y in zip(xs,ys) if x>0] or [0]):.1f}; slope dur/overlap {b:.3f}, intercept {my-b*mx:.1f}")
