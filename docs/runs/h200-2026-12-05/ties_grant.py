"""Where a launch/device-sync tie is lost: how long each worker took from its
lock's grant to its device call.

    python3 ties_grant.py TRACE.json.gz ...

Card traces of split-devsync at 3-4 workers. For every launch (the `compute`
call) and another worker's cudaDeviceSynchronize whose calls began within
300 us of each other, by limit and by whether the sync waited for the kernel
(won: the launch came first) or not (lost): the launching worker's time from
its compute lock's grant to its launch call, the syncing worker's from its
mem lock's grant to its sync call, and the sync call's start less the
launch call's (us).
"""
import json,gzip,sys,collections,re
def pct(v,q): v=sorted(v); return v[min(len(v)-1,int(q*len(v)))] if v else float('nan')
out=collections.defaultdict(lambda: collections.defaultdict(list))
for path in sys.argv[1:]:
    lim='16' if '16GiB' in path else 'whole'
    ev=json.load(gzip.open(path,'rt')); ev=ev['traceEvents'] if isinstance(ev,dict) else ev
    ev=[e for e in ev if e.get('ph')!='M']
    # lock grant spans: 'lock mem'/'lock compute' threads: X events named 'w<i> bench/<p>' with args worker
    grants=[]
    for e in ev:
        a=e.get('args',{})
        if e.get('ph')=='X' and e['name'].startswith('w') and 'worker' in a and ' bench/' in e['name']:
            grants.append((e['ts'],a['worker'],e['tid'],a['partition']))
    launches=[(e['ts']-e['args'].get('late_us',0)-e['args']['took_us'],e['tid'],e['args']['partition']) for e in ev if e.get('name')=='compute' and 'took_us' in e.get('args',{})]
    syncs=[(e['ts']-e['args'].get('late_us',0)-e['args']['took_us'],e['tid'],e['args']['partition'],e['args']['waited']) for e in ev if e.get('name')=='device_sync' and 'took_us' in e.get('args',{})]
    # grant lookup: for a worker's call, the latest grant to that worker's partition before the call
    def lastgrant(part,t):
        g=[x[0] for x in grants if x[3]==part and x[0]<=t]
        return max(g) if g else None
    for lc,lt,lp in launches:
        for sc,st,sp,w in syncs:
            if st!=lt and abs(sc-lc)<300:
                gl=lastgrant(lp,lc); gs=lastgrant(sp,sc)
                if gl is None or gs is None: continue
                k=lim+(' lost' if not w else ' won')
                out[k]['grant->launch call']. append(lc-gl)
                out[k]['grant->sync call'].append(sc-gs)
                out[k]['sync call - launch call'].append(sc-lc)
for k in sorted(out):
    print(k, ' | '.join(f"{n}: n={len(v)} p10 {pct(v,.1):.0f} p50 {pct(v,.5):.0f} p90 {pct(v,.9):.0f}" for n,v in out[k].items()))
