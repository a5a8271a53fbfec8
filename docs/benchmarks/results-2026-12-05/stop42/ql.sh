#!/bin/bash
# five runs of the warm 100k cells (unfiltered, subject), binaries alternated
for r in 0 1 2 3 4; do for v in unfiltered subject; do for b in prs-b3e8 prs-cut; do
python3 - "$v" "$b" "$r" <<'PY'
import json,sys
v,b,r=sys.argv[1:]
s=json.load(open('/tmp/s36/w/specs/n100000-warm-unfiltered.json'))
s.update(cell_id=f'n100000-warm-{v}',variant=v,questions=50,result_path=f'/tmp/s42/ql/{v}-{b}-{r}.json')
json.dump(s,open(f'/tmp/s42/ql/spec-{v}-{b}-{r}.json','w'),indent=1)
PY
/tmp/s39/$b benchmark query-latency cell /tmp/s42/ql/spec-$v-$b-$r.json > /tmp/s42/ql/log-$v-$b-$r.txt 2>&1
done; done; done
