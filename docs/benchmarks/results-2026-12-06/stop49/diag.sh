#!/bin/bash
# diag.sh BIN OUT: one 10/s step of 40 s at 1M, started from the sidecar without a half copy
cp /tmp/s49/nohalf.sidecar /tmp/s49/scen/sc-c/qlat-s20261017-n1000000-rs1.db.particles-rs.sidecar
RUST_LOG=info,particles_engine=debug PARTICLES_SIDECAR_DIR=/tmp/s49/scen/sc-c $1 benchmark serve-load --store /tmp/s46/ql1m/stores/qlat-s20261017-n1000000-rs1.db --rates 10 --step-seconds 40 --max-requests 2000 --drain-seconds 10 --out $2 > $2.out 2>&1
sed -n 5p $2/results.md
grep "written behind" $2/engine.log | grep -o '"written_ms.*'
python3 - $2/engine.log <<'PY'
import json,sys
for line in open(sys.argv[1]):
    try: j=json.loads(line)
    except: continue
    if j.get('message')=='request' and j['latency_ms']>400: print(j['timestamp'],round(j['latency_ms']),j.get('batch_size'))
PY
