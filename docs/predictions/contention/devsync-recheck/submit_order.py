import sys,glob,collections
sys.path.insert(0,__import__('os').path.dirname(__file__)); from ties import load, threads
def ties(p):
    ev=load(p); th=threads(ev)
    X=[e for e in ev if e.get('ph')=='X']; I=[e for e in ev if e.get('ph')=='i']
    wk=lambda e: th.get((e['pid'],e['tid']),'').startswith('worker')
    out=[]
    for s in [e for e in I if e['name']=='device_sync']:
        st_est=s['ts']-s['args']['took_us']; part=s['args']['partition']
        bstage=[x for x in X if wk(x) and x['name']=='stage' and x['args'].get('partition')==part and 0<=st_est-x['ts']<3000]
        if not bstage: continue
        b=bstage[-1]['ts']
        # A's compute stage begin within 1 ms of b
        ac=[x for x in X if wk(x) and x['name']=='compute' and x['tid']!=s['tid'] and abs(x['ts']-b)<1000]
        if not ac: continue
        a=ac[0]
        launch=[e for e in I if e['name']=='compute' and e['args'].get('partition')==a['args'].get('partition') and 0<=e['ts']-a['ts']<3000][0]
        out.append(dict(caught=s['args']['took_us']>2000, a_minus_b=a['ts']-b, launch_took=launch['args']['took_us'],
                        launch_deliv=(launch['ts']-launch['args']['took_us'])-a['ts'],
                        sync_deliv=st_est-b, sync_took=s['args']['took_us'], file=p))
    return out
allt=[]
for p in [f for f in sorted(set(glob.glob('docs/runs/**/trace-split-devsync-w[234].json*',recursive=True))) if 'grid' in f]:
    allt+=ties(p)
import statistics as S
for cv in (True,False):
    xs=[x for x in allt if x['caught']==cv]
    print('caught' if cv else 'not caught', len(xs), 'A compute begin before B stage begin:', sum(x['a_minus_b']<0 for x in xs))
    for k in ('a_minus_b','launch_took','launch_deliv','sync_deliv'):
        v=sorted(x[k] for x in xs); print('   %-14s median %7.1f  p10 %7.1f p90 %7.1f min %7.1f max %7.1f'%(k,S.median(v),v[len(v)//10],v[9*len(v)//10],v[0],v[-1]))
print('not caught, A first:')
for x in allt:
    if not x['caught'] and x['a_minus_b']<0: print('  ',{k:(round(v,1) if isinstance(v,float) else v) for k,v in x.items() if k!='file'}, x['file'].split('runs/')[1][:60])
