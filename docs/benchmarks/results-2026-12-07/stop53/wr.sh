#!/bin/bash
# wr.sh BIN SPEC OUT : a first-query cell (sidecar removed first); prints the answer's time and the sidecar write's
B=$1; SPEC=$2; OUT=$3
store=$(python3 -c "import json;print(json.load(open('$SPEC'))['store_path'])")
rm -f "$store.particles-rs.sidecar"
python3 - "$SPEC" "$OUT" <<'P'
import json,sys; s=json.load(open(sys.argv[1])); s['result_path']=sys.argv[2]; json.dump(s,open(sys.argv[1]+'.wr','w'))
P
$B benchmark query-latency cell "$SPEC.wr" >/dev/null 2>&1
python3 -c "
import json; d=json.load(open('$OUT')); s=d['samples'][0]; print('$(basename $B)', 'answer', round(s['total_seconds'],3), 'write', round(d['sidecar']['sidecar_write_seconds'],3), 'floor', round(d['floors']['json_parse_single_core_seconds'],3))"
