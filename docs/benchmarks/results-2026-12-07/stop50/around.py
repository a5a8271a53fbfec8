import json,sys
from datetime import datetime
def ts(s): return datetime.fromisoformat(s.replace('Z','+00:00')).timestamp()
for run in sys.argv[1:]:
    reqs=[]; t_wb=None; wb=None
    for line in open(f'{run}/engine.log'):
        try: d=json.loads(line)
        except: continue
        if 'sidecar was written' in d.get('message',''): t_wb=ts(d['timestamp']); wb=d
        if d.get('message')=='request' and d.get('path')=='/query':
            reqs.append((ts(d['timestamp']), d['latency_ms']))
    rel=wb.get('released_ms',0); fr=wb['freed_ms']
    # answered within windows relative to the swap-complete log time
    for lo,hi in [(-40,-3),(-3,0),(0,3),(3,40)]:
        l=sorted(x for t,x in reqs if lo<=t-t_wb<hi)
        if l: print(run, f"[{lo},{hi}) s: n={len(l)} p50={l[len(l)//2]:.0f} max={l[-1]:.0f} ms")
    print(run,'freed',round(fr),'released',round(rel))
