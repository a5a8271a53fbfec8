#!/bin/bash
BIN=$1; DIR=$2
cd /tmp/s39
PARTICLES_API_RATE_LIMIT_PER_MINUTE=0 $BIN --config load.yaml serve --http --store $DIR/store-100k.db --listen 127.0.0.1:18081 --max-inflight 32 > /tmp/s41e.server.log 2>&1 &
SP=$!
for i in $(seq 1 300); do curl -s -o /dev/null http://127.0.0.1:18081/health && break; sleep 0.5; done
for q in "what changed in the coin markets" "rare coins from the roman empire"; do
curl -s -H 'content-type: application/json' -d "{\"question\": \"$q\"}" http://127.0.0.1:18081/particles-rs/explain | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["counts"], d.get("scan_stop")); print([ (h.get("factors") or h) for h in d["hits"][:3]])'
done
kill $SP; wait $SP 2>/dev/null
