#!/bin/bash
# usage: measure.sh BIN DIR OUT  (one write at 1M: memory and the delta's cost)
BIN=$1; DIR=$2; OUT=$3
Q='{"question": "what changed in the coin markets"}'
ask() { curl -s -o /dev/null -w "$1 %{http_code} %{time_total}\n" -H 'content-type: application/json' -d "$Q" http://127.0.0.1:18081/query; }
anon() { echo "$1 $(grep -E 'RssAnon|RssFile' /proc/$SP/status | tr -s ' ' | tr '\n' ' ')"; }
# 1. bring the sidecar to the store's head (a one-shot rewrite), 2. a server makes the half copy and writes it at exit
./$BIN --config load.yaml query --store $DIR/store-1m.db "what changed in the coin markets" > /dev/null 2>&1
PARTICLES_API_RATE_LIMIT_PER_MINUTE=0 ./$BIN --config load.yaml serve --http --store $DIR/store-1m.db --listen 127.0.0.1:18081 --max-inflight 32 > $OUT.prep.log 2>&1 &
SP=$!
for i in $(seq 1 300); do curl -s -o /dev/null http://127.0.0.1:18081/health && break; sleep 0.5; done
ask prep; kill $SP; wait $SP
# 3. the measured server
PARTICLES_API_RATE_LIMIT_PER_MINUTE=0 ./$BIN --config load.yaml serve --http --store $DIR/store-1m.db --listen 127.0.0.1:18081 --max-inflight 32 > $OUT.server.log 2>&1 &
SP=$!
for i in $(seq 1 300); do curl -s -o /dev/null http://127.0.0.1:18081/health && break; sleep 0.5; done
./$BIN --config load.yaml benchmark serve-load --url http://127.0.0.1:18081 --pid $SP --rates 1 --step-seconds 20 --max-requests 2000 --drain-seconds 30 --out $OUT-before > $OUT-before.load.log 2>&1
anon "before-write"
ask alone; ask alone
sqlite3 $DIR/store-1m.db "UPDATE particles SET confidence_value = confidence_value WHERE id = '597c082a-2f19-4090-ac67-5ebc37b1f3f2'"
ask after-write-first; ask after-write; ask after-write
anon "after-write"
./$BIN --config load.yaml benchmark serve-load --url http://127.0.0.1:18081 --pid $SP --rates 1 --step-seconds 20 --max-requests 2000 --drain-seconds 30 --out $OUT-after > $OUT-after.load.log 2>&1
anon "after-load"
kill $SP; wait $SP 2>/dev/null
grep "candidate cache" $OUT.server.log | sed 's/.*observe: //'
