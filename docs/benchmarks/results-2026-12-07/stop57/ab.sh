#!/bin/bash
# usage: ab.sh ROUNDS OUTDIR ORDER VARIANT...
#   ORDER: "before after" or "after before" (which build runs first in a round)
#   env: BEFORE_BIN, BEFORE_SPEC, AFTER_BIN, AFTER_SPEC; a spec path's VARIANT
#   is written as {v} (e.g. /tmp/s57/spec-after-{v}.json).
# Each cell's result goes to OUTDIR/{before,after}-VARIANT-rROUND.json, and one
# line per cell to stdout: p50, the scan floor's ratio, the median `other`,
# `sql_fetch` and `decode` stages, p90, questions over 3 ms.
R=$1; O=$2; ORDER=$3; shift 3
mkdir -p "$O"
for r in $(seq "$R"); do for b in $ORDER; do for v in "$@"; do
if [ "$b" = before ]; then spec=${BEFORE_SPEC//\{v\}/$v}; bin=$BEFORE_BIN; else spec=${AFTER_SPEC//\{v\}/$v}; bin=$AFTER_BIN; fi
python3 - "$spec" "$b" "$r" "$O" "$v" <<'PY'
import json,sys
spec,b,r,o,v=sys.argv[1:]
s=json.load(open(spec))
s['result_path']='%s/%s-%s-r%s.json'%(o,b,v,r)
json.dump(s,open('%s/spec-%s-%s-r%s.json'%(o,b,v,r),'w'))
PY
"$bin" benchmark query-latency cell "$O/spec-$b-$v-r$r.json" >/dev/null 2>&1
python3 - "$O/$b-$v-r$r.json" <<'PY'
import json,sys,statistics as st
d=json.load(open(sys.argv[1])); S=d['samples']
fl=d['floors'].get('f32_scan_single_thread_seconds')
t=sorted(s['total_seconds'] for s in S)
p=st.median(t)
print(sys.argv[1].split('/')[-1], 'p50 %.3f ms'%(1e3*p), ('floor %.2f ms ratio %.2fx'%(1e3*fl,p/fl)) if fl else '', 'other %.2f sql %.2f decode %.2f'%tuple(1e3*st.median([s['stages'][k] for s in S]) for k in ('other','sql_fetch','decode')), 'p90 %.2f'%(1e3*t[int(0.9*len(t))]), 'over3 %d'%sum(x>3e-3 for x in t))
PY
done; done; done
