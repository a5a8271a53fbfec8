#!/bin/bash
# BIN DIR N: N warm questions at 1M, print server-timing
BIN=$1; DIR=$2; N=${3:-5}
cd /tmp/s39
ask() { curl -s -o /dev/null -D - -H 'content-type: application/json' -d "{\"question\": \"$1\"}" http://127.0.0.1:18081/query | grep -i '^server-timing' | tr -d '\r'; }
PARTICLES_API_RATE_LIMIT_PER_MINUTE=0 $BIN --config load.yaml serve --http --store $DIR/store-1m.db --listen 127.0.0.1:18081 --max-inflight 32 > /tmp/s41t.server.log 2>&1 &
SP=$!
for i in $(seq 1 300); do curl -s -o /dev/null http://127.0.0.1:18081/health && break; sleep 0.5; done
ask "warm up"; ask "warm up two"
for q in "what changed in the coin markets" "rare coins from the roman empire" "who audited the mint" "silver prices last year" "grading standards for proof coins"; do ask "$q"; done | head -$N
kill $SP; wait $SP 2>/dev/null
