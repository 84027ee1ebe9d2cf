"""split-devsync's rows at 2-4 workers: the card's draws against the seeds.

    python3 racing.py DIR [PREDICTIONS]

DIR holds this round's tarballs unpacked (r2-d2/d2.tgz into DIR/d2, r2-d3/d3.tgz
into DIR/d3, r3/r3.tgz into DIR/r3); draw 1 is runs/h200-2026-12-03g r2's grid.
PREDICTIONS (default docs/predictions/contention) holds f22/ and f23/ with
the sim tables. Run from the repository root. For each row: the draws' mean, sd and range of
items/s, their GPU busy, in how many an OOM came and partitions were lost; the
prediction's mean, its seeds' range and sd, in how many seeds an OOM came;
the prediction's error against the draws' mean.
"""
import re,glob,statistics as S,sys,os
X=sys.argv[1]
P=sys.argv[2] if len(sys.argv)>2 else 'docs/predictions/contention'
def rows(path, design='split-devsync'):
    out={}
    for line in open(path):
        f=line.split()
        if len(f)>9 and f[0]==design and f[1].isdigit():
            out[int(f[1])]=(float(f[2]),float(f[3].rstrip('%')),int(f[7])+int(f[8])>0, int(f[5]))
    return out
def seeds(path, design='split-devsync'):
    out={}
    for line in open(path):
        m=re.match(design+r' × (\d+): (\d+) seeds, items/s ([\d.]+) to ([\d.]+) \(sd ([\d.]+)\), an OOM in (\d+) of them',line)
        if m: out[int(m[1])]=(float(m[3]),float(m[4]),float(m[5]),int(m[6]),int(m[2]))
    return out
for fam in ['f22','f23']:
  for lim in ['16GiB','140GiB']:
    draws=['docs/runs/h200-2026-12-03g/r2/grid/gpu-%s-%s.txt'%(fam,lim),X+'/d2/grid/gpu-%s-%s.txt'%(fam,lim),X+'/d3/grid/gpu-%s-%s.txt'%(fam,lim)]+sorted(glob.glob(X+'/r3/d*/gpu-%s-%s.txt'%(fam,lim)))
    pr=rows('%s/%s/sim-%s-%s.txt'%(P,fam,fam,lim)); sd=seeds('%s/%s/sim-%s-%s.err'%(P,fam,fam,lim))
    for w in [2,3,4]:
        d=[rows(p)[w] for p in draws if w in rows(p)]
        ips=[x[0] for x in d]; busy=[x[1] for x in d]; oom=sum(x[2] for x in d); lost=sum(x[3] for x in d)
        s=sd[w]
        print('%s %-6s w%d card %d draws: %.2f ± %.2f (%.2f–%.2f) busy %.1f, OOM in %d/%d, lost %d | sim %.2f (%.2f–%.2f, sd %.2f) busy %.1f, OOM in %d/%d seeds | err %+.1f%% busyΔ %+.1f'%(
          fam,lim,w,len(d),S.mean(ips),S.stdev(ips),min(ips),max(ips),S.mean(busy),oom,len(d),lost,pr[w][0],s[0],s[1],s[2],pr[w][1],s[3],s[4],100*(pr[w][0]/S.mean(ips)-1),pr[w][1]-S.mean(busy)))
