#!/bin/bash
# usage: load1m.sh BIN DIR OUT RATES [WRITE]: serve-load at 1M; WRITE=1 writes one row first
BIN=$1; DIR=$2; OUT=$3; RATES=$4; WRITE=${5:-0}
PARTICLES_API_RATE_LIMIT_PER_MINUTE=0 ./$BIN --config load.yaml serve --http --store $DIR/store-1m.db --listen 127.0.0.1:18081 --max-inflight 32 > $OUT.server.log 2>&1 &
SP=$!
for i in $(seq 1 300); do curl -s -o /dev/null http://127.0.0.1:18081/health && break; sleep 0.5; done
curl -s -o /dev/null -H 'content-type: application/json' -d '{"question": "what changed"}' http://127.0.0.1:18081/query
if [ "$WRITE" = 1 ]; then
  sqlite3 $DIR/store-1m.db "UPDATE particles SET confidence_value = confidence_value WHERE id = '597c082a-2f19-4090-ac67-5ebc37b1f3f2'"
  curl -s -o /dev/null -w "first after the write %{time_total}\n" -H 'content-type: application/json' -d '{"question": "what changed"}' http://127.0.0.1:18081/query
fi
echo "start $(grep -E 'RssAnon' /proc/$SP/status | tr -s ' ')"
./$BIN --config load.yaml benchmark serve-load --url http://127.0.0.1:18081 --pid $SP --rates $RATES --step-seconds 30 --max-requests 2000 --drain-seconds 30 --out $OUT > $OUT.load.log 2>&1
echo "end $(grep -E 'RssAnon' /proc/$SP/status | tr -s ' ')"
kill $SP; wait $SP 2>/dev/null
