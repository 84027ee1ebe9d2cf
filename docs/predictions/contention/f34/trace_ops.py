#!/usr/bin/env python3
"""Reads the contention grid's traces op by op (docs/predictions/contention/f34/README.md).

  trace_ops.py ops FAMILY LIMIT DESIGN WORKERS   means per op kind, card against simulator
  trace_ops.py pool FAMILY LIMIT DESIGN WORKERS  kernel spans on the card against the
                                                 pool-serialization reading of the README

Card traces: docs/runs/h200-2026-12-01d/contention-grid; simulator traces: $SIMDIR
(default /tmp/simgrid), made by
  OUT=/tmp/simgrid BACKEND=sim FAMILIES="f3 f4" TRACES=1 gpuprove/contention_grid.sh
A device op is an instant at its end with args.took_us; a span ("ph":"X") is shown in [].
"""
import json, gzip, os, sys, collections
def load(p):
    f=gzip.open(p) if p.endswith('.gz') else open(p)
    d=json.load(f)
    return d['traceEvents'] if isinstance(d,dict) else d
def summary(p):
    ev=load(p)
    names={}
    for e in ev:
        if e.get('ph')=='M' and e['name'] in('process_name','thread_name'):
            names[(e['name'],e['pid'],e.get('tid'))]=e['args']['name']
    s=collections.defaultdict(list)
    for e in ev:
        if e.get('ph')=='X':
            th=names.get(('thread_name',e['pid'],e['tid']),'?')
            kind='worker' if th.startswith('worker') else th
            s[(kind,e['name'])].append(e['dur']/1000)
    return s
G='docs/runs/h200-2026-12-01d/contention-grid/traces-gpu-%s-%s/trace-%s-w%d.json.gz'
S=os.environ.get('SIMDIR','/tmp/simgrid')+'/traces-sim-%s-%s/trace-%s-w%d.json'
def ops(p):
    ev=load(p)
    d=collections.defaultdict(list)
    for e in ev:
        if e.get('ph')=='i' and 'took_us' in e.get('args',{}):
            a=e['args']; k=e['name']+('(w)' if a.get('waited') else '')
            d[k].append(a['took_us']/1000)
        if e.get('ph')=='X' and not e['name'].startswith(('w0','w1','w2','w3')):
            d['['+e['name']+']'].append(e['dur']/1000)
    return d
def cmp(fam,lim,des,w):
    g=ops(G%(fam,lim,des,w)); s=ops(S%(fam,lim,des,w))
    print('--- %s %s %s w%d      card n/mean     sim n/mean   diff*n_card(ms)'%(fam,lim,des,w))
    for k in sorted(set(g)|set(s)):
        gv=g.get(k,[]); sv=s.get(k,[])
        gm=sum(gv)/len(gv) if gv else 0; sm=sum(sv)/len(sv) if sv else 0
        print('  %-22s %4d %9.2f   %4d %9.2f   %+8.1f'%(k,len(gv),gm,len(sv),sm,(gm-sm)*len(gv)))

def iv(p):
    ev=load(p); ops=[]
    for e in ev:
        if e.get('ph')=='i' and 'took_us' in e.get('args',{}):
            a=e['args']; ops.append((e['name'],e['tid'],a['partition'],e['ts']/1000-a['took_us']/1000,e['ts']/1000,a.get('bytes',0)))
    return ops
def ov(a0,a1,b0,b1): return max(0,min(a1,b1)-max(a0,b0))
def kernels(p):
    ops=iv(p); out=[]
    launch={}
    for o in ops:
        if o[0]=='compute': launch[(o[1],o[2])]=o[4]
    for o in ops:
        if o[0] in('stream_sync','event_sync') and (o[1],o[2]) in launch:
            k0=launch[(o[1],o[2])]; k1=o[4]
            d=collections.defaultdict(float)
            for q in ops:
                if q[1]!=o[1] and q[0] in('trim_pool','malloc_async','copy_in','malloc','free','device_sync'):
                    d[q[0]]+=ov(k0,k1,q[3],q[4])
            out.append((k1-k0,d))
    return out
def test(fam,lim,des,w,D):
    ops=iv(G%(fam,lim,des,w))
    launch={(o[1],o[2]):o[4] for o in ops if o[0]=='compute'}
    res=[]
    for o in ops:
        if o[0]!='stream_sync' or (o[1],o[2]) not in launch: continue
        L=launch[(o[1],o[2])]; act=o[4]
        pool=sorted([(q[3],q[4]) for q in ops if q[1]!=o[1] and (q[0]=='trim_pool' and q[5] or q[0]=='malloc_async' and q[4]-q[3]>3)])
        s=L
        for a,b in pool:
            if a<s<b: s=b
        e=s+D
        for a,b in pool:
            if a<e<b: e=b
        res.append((act-L,e-L))
    n=len(res)
    print('%s %s %-13s w%d kernel card %.1f  pool rule %.1f  mean |err| %.1f'%(fam,lim,des,w,sum(r[0] for r in res)/n,sum(r[1] for r in res)/n,sum(abs(r[1]-r[0]) for r in res)/n))

if __name__=='__main__':
    what,fam,lim,des=sys.argv[1:5]
    for w in map(int,sys.argv[5].split(',')):
        if what=='ops': cmp(fam,lim,des,w)
        else: test(fam,lim,des,w,{'f3':250.5,'f4':101.8}[fam])
