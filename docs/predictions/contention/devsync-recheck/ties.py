import json,sys,gzip,glob,os,collections
def load(p):
    f=gzip.open(p) if p.endswith('.gz') else open(p)
    d=json.load(f)
    return d['traceEvents'] if isinstance(d,dict) else d
def threads(ev):
    """Each (pid, tid)'s thread name, from the trace's metadata events."""
    return {(e['pid'], e['tid']): e['args']['name'] for e in ev if e.get('ph') == 'M' and e['name'] == 'thread_name'}
def analyze(p, verbose=False):
    ev=[e for e in load(p) if e.get('ph')=='i' and e.get('tid',0)<1000]
    # kernels: launch (compute instant) to stream_sync of same worker/partition
    launches={}; kernels=[]
    for e in sorted(ev,key=lambda e:e['ts']):
        a=e.get('args',{}); part=a.get('partition'); w=e['tid']
        if e['name']=='compute':
            launches[(w,part)]=(e['ts']-a.get('took_us',0), e['ts'])
        elif e['name']=='stream_sync' and (w,part) in launches:
            ls,le=launches.pop((w,part)); kernels.append((w,part,ls,le,e['ts']))
    res=[]
    for e in ev:
        if e['name']!='device_sync': continue
        a=e['args']; w=e['tid']; end=e['ts']; took=a.get('took_us',0); start=end-took
        # nearest launch by another worker, by launch start relative to sync start
        others=[k for k in kernels if k[0]!=w]
        # running at sync start (launched before, ended after)
        running=[k for k in others if k[2]<=start and k[4]>start]
        near=min(others,key=lambda k:abs(k[2]-start)) if others else None
        d=(start-near[2])/1000 if near else None  # ms: sync start - launch start (>0: launch first)
        caught_near = near is not None and abs(end-near[4])<2000 and took>2000
        res.append(dict(w=w,start=start/1000,took=took/1000,waited=a.get('waited'),d=d,caught_near=caught_near,nrun=len(running),
                        near_end_after=(near[4]-start)/1000 if near else None))
    return res
if __name__=='__main__':
    for p in sys.argv[1:]:
        r=analyze(p)
        ties=[x for x in r if x['d'] is not None and abs(x['d'])<3]
        waited=[x for x in r if x['took']>2]
        print(os.path.relpath(p,'/work/main/docs/runs'), 'syncs',len(r),'waited',len(waited),'meanwait %.1f'%(sum(x['took'] for x in r)/max(1,len(r))),
              'ties(|d|<3ms)',len(ties),'caught',sum(x['caught_near'] for x in ties))
        if '-v' in os.environ.get('V',''):
            for x in ties: print('   tie d=%.3f took=%.1f caught=%s'%(x['d'],x['took'],x['caught_near']))
