import sys,glob,collections,re
sys.path.insert(0,__import__('os').path.dirname(__file__)); from ties import load, threads
def ties(p):
    ev=load(p); th=threads(ev)
    X=[e for e in ev if e.get('ph')=='X']; I=[e for e in ev if e.get('ph')=='i']
    memspans=[e for e in X if th.get((e['pid'],e['tid']))=='lock mem']
    compspans=[e for e in X if th.get((e['pid'],e['tid']))=='lock compute']
    out=[]
    for s in [e for e in I if e['name']=='device_sync']:
        st=s['ts']-s['args']['took_us']; w=s['tid']; part=s['args']['partition']
        # B's mem grant: mem span of part starting just before st
        bm=[m for m in memspans if m['args'].get('partition')==part and m['ts']<=st and st-m['ts']<2000]
        if not bm: continue
        bm=bm[0]
        # previous holder's mem span ending just before B's grant
        am=[m for m in memspans if abs(m['ts']+m['dur']-bm['ts'])<500 and m is not bm]
        if not am: continue
        am=am[0]; apart=am['args'].get('partition')
        # A's compute grant near A's mem release
        ac=[c for c in compspans if c['args'].get('partition')==apart and abs(c['ts']-(am['ts']+am['dur']))<1000]
        if not ac: continue   # compute not granted at once: no tie
        ac=ac[0]
        launch=[e for e in I if e['name']=='compute' and e['args'].get('partition')==apart and abs(e['ts']-ac['ts'])<2000]
        if not launch: continue
        L=launch[0]; lst=L['ts']-L['args']['took_us']
        first_hop='compute' if ac['ts']<am['ts']+am['dur'] else 'mem'
        caught=s['args']['took_us']>2000
        out.append(dict(hop=first_hop,caught=caught,compgrant_minus_memrel=(ac['ts']-(am['ts']+am['dur'])),
             launch_minus_sync=lst-st, bgrant_minus_agrant=bm['ts']-ac['ts'],
             agrant_to_launch=lst-ac['ts'], bgrant_to_sync=st-bm['ts']))
    return out
if __name__=='__main__':
    allt=[]
    files=sorted(set(glob.glob('docs/runs/**/trace-split-devsync-w[234].json*',recursive=True)))
    files=[f for f in files if 'grid' in f]
    for p in files:
        t=ties(p); allt+=t
    c=collections.Counter((x['hop'],x['caught']) for x in allt)
    print(c)
    import statistics as S
    for hopv in ('compute','mem'):
        for cv in (True,False):
            xs=[x for x in allt if x['hop']==hopv and x['caught']==cv]
            if not xs: continue
            print(hopv,cv,len(xs))
            for k in ('compgrant_minus_memrel','launch_minus_sync','bgrant_minus_agrant','agrant_to_launch','bgrant_to_sync'):
                v=[x[k] for x in xs]; print('   %-24s median %7.1f  min %7.1f max %7.1f'%(k,S.median(v),min(v),max(v)))

