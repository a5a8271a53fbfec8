#!/bin/bash
# usage: many.sh BIN DIR N: the first answers after commits that change N rows each
BIN=$1; DIR=$2; N=$3
Q='{"question": "what changed in the coin markets"}'
ask() { echo "$1 $(curl -s -o /dev/null -D - -H 'content-type: application/json' -d "$Q" http://127.0.0.1:18082/query | grep -i '^server-timing' | tr -d '\r' | grep -o 'pass;dur=[0-9.]*\|total;dur=[0-9.]*' | tr '\n' ' ')"; }
PARTICLES_API_RATE_LIMIT_PER_MINUTE=0 ./$BIN --config load.yaml serve --http --store $DIR/store-100k.db --listen 127.0.0.1:18082 --max-inflight 32 > many.server.log 2>&1 &
SP=$!
for i in $(seq 1 300); do curl -s -o /dev/null http://127.0.0.1:18082/health && break; sleep 0.5; done
ask warm; ask warm; ask warm
for k in 1 2 3; do
sqlite3 $DIR/store-100k.db "UPDATE particles SET confidence_value = confidence_value WHERE rowid IN (SELECT rowid FROM particles WHERE status = 'ACTIVE' ORDER BY rowid LIMIT $N OFFSET $((k * 7919)))"
ask write-first; ask next
done
kill $SP; wait $SP 2>/dev/null
