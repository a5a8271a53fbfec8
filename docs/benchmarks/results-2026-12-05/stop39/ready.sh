#!/bin/bash
# usage: ready.sh BIN DIR: the sidecar at the store's head, with its half copy
BIN=$1; DIR=$2
./$BIN --config load.yaml query --store $DIR/store-1m.db "what changed in the coin markets" > /dev/null 2>&1
PARTICLES_API_RATE_LIMIT_PER_MINUTE=0 ./$BIN --config load.yaml serve --http --store $DIR/store-1m.db --listen 127.0.0.1:18081 --max-inflight 32 > $DIR.ready.log 2>&1 &
SP=$!
for i in $(seq 1 300); do curl -s -o /dev/null http://127.0.0.1:18081/health && break; sleep 0.5; done
curl -s -o /dev/null -H 'content-type: application/json' -d '{"question": "what changed"}' http://127.0.0.1:18081/query
kill $SP; wait $SP
