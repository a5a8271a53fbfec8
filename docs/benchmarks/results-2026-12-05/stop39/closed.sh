#!/bin/bash
# usage: closed.sh BIN DIR N P: N queries, P at a time; prints wall seconds and the mean pass
BIN=$1; DIR=$2; N=$3; P=$4
PARTICLES_API_RATE_LIMIT_PER_MINUTE=0 ./$BIN --config load.yaml serve --http --store $DIR/store-1m.db --listen 127.0.0.1:18081 --max-inflight 32 > closed.server.log 2>&1 &
SP=$!
for i in $(seq 1 300); do curl -s -o /dev/null http://127.0.0.1:18081/health && break; sleep 0.5; done
for i in 1 2 3; do curl -s -o /dev/null -H 'content-type: application/json' -d '{"question": "warm up the coin markets"}' http://127.0.0.1:18081/query; done
T0=$(date +%s.%N)
seq 1 $N | xargs -P $P -I{} curl -s -o /dev/null -D - -H 'content-type: application/json' -d '{"question": "question {} about ledgers, coins and markets"}' http://127.0.0.1:18081/query | grep -i "^server-timing" > closed.timing
T1=$(date +%s.%N)
echo "$BIN wall $(echo "$T1 - $T0" | bc) s; mean pass $(grep -o 'pass;dur=[0-9.]*' closed.timing | cut -d= -f2 | awk '{s+=$1} END {printf "%.1f ms over %d", s/NR, NR}'); mean batch $(grep -o 'desc="[0-9]*"' closed.timing | tr -dc '0-9\n' | awk '{s+=$1} END {printf "%.2f", s/NR}')"
kill $SP; wait $SP 2>/dev/null
