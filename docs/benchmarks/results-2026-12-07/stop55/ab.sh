#!/bin/bash
# usage: ab.sh ROUNDS OUTDIR variant...  ; alternates bin-before, bin-mmap
R=$1; O=$2; shift 2
mkdir -p $O
for r in $(seq $R); do for b in before mmap; do for v in "$@"; do
python3 - $v $b $r $O <<'PY'
import json,sys
v,b,r,o=sys.argv[1:]
s=json.load(open('/tmp/s55/spec-%s.json'%v))
s['result_path']='%s/%s-%s-r%s.json'%(o,b,v,r)
json.dump(s,open('%s/spec-%s-%s-r%s.json'%(o,b,v,r),'w'))
PY
/tmp/s55/bin-$b benchmark query-latency cell $O/spec-$b-$v-r$r.json >/dev/null 2>&1
python3 - $O/$b-$v-r$r.json <<'PY'
import json,sys,statistics as st
d=json.load(open(sys.argv[1])); S=d['samples']
fl=d['floors'].get('f32_scan_single_thread_seconds')
p=st.median([s['total_seconds'] for s in S])
print(sys.argv[1].split('/')[-1], 'p50 %.3f ms'%(1e3*p), ('floor %.2f ms ratio %.2fx'%(1e3*fl,p/fl)) if fl else '', 'other %.2f'%(1e3*st.median([s['stages']['other'] for s in S])), 'p90 %.2f'%(1e3*sorted(s['total_seconds'] for s in S)[int(0.9*len(S))]))
PY
done; done; done
