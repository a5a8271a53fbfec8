#!/bin/bash
# BIN DIR OUT: 30 lone 1M questions under perf record
BIN=$1; DIR=$2; OUT=$3
cd /tmp/s39
PARTICLES_API_RATE_LIMIT_PER_MINUTE=0 $BIN --config load.yaml serve --http --store $DIR/store-1m.db --listen 127.0.0.1:18081 --max-inflight 32 > /tmp/s42/lone.server.log 2>&1 &
SP=$!
for i in $(seq 1 300); do curl -s -o /dev/null http://127.0.0.1:18081/health && break; sleep 0.5; done
for i in 1 2 3; do curl -s -o /dev/null -H 'content-type: application/json' -d '{"question": "warm up the coin markets"}' http://127.0.0.1:18081/query; done
perf record -F 1999 -o $OUT -p $SP 2>/dev/null &
PP=$!; sleep 0.5
for i in $(seq 1 30); do curl -s -o /dev/null -H 'content-type: application/json' -d "{\"question\": \"lone question $i about coins\"}" http://127.0.0.1:18081/query; done
kill -INT $PP; wait $PP
kill $SP; wait $SP 2>/dev/null
