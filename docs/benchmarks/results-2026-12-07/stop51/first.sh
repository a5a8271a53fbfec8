#!/bin/bash
# first.sh BIN SPEC OUT : one first-query cell, sidecar removed first
B=$1; SPEC=$2; OUT=$3
store=$(python3 -c "import json;print(json.load(open('$SPEC'))['store_path'])")
rm -f "$store.particles-rs.sidecar"
python3 - "$SPEC" "$OUT" <<'P'
import json,sys; s=json.load(open(sys.argv[1])); s['result_path']=sys.argv[2]; json.dump(s,open(sys.argv[1]+'.run','w'))
P
$B benchmark query-latency cell "$SPEC.run" >/dev/null 2>&1
python3 -c "
import json; d=json.load(open('$OUT')); s=d['samples'][0]; f=d['floors']['json_parse_single_core_seconds']; print('total',round(s['total_seconds'],3),'floor',round(f,3),'ratio',round(s['total_seconds']/f,2), {k:round(v,3) for k,v in s['stages'].items() if v>0.01}, s.get('route'))"
