#!/bin/bash
# usage: run1m.sh BIN DIR OUT RATES [STEP]
BIN=$1; DIR=$2; OUT=$3; RATES=$4; STEP=${5:-30}
PARTICLES_API_RATE_LIMIT_PER_MINUTE=0 ./$BIN --config load.yaml serve --http --store $DIR/store-100k.db --listen 127.0.0.1:18082 --max-inflight 32 > $OUT.server.log 2>&1 &
SP=$!
for i in $(seq 1 300); do curl -s -o /dev/null http://127.0.0.1:18082/health && break; sleep 0.5; done
grep -E "RssAnon|RssFile" /proc/$SP/status | tr -s ' ' | tr '\n' ' '; echo " (after start)"
./$BIN --config load.yaml benchmark serve-load --url http://127.0.0.1:18082 --pid $SP --rates $RATES --step-seconds $STEP --max-requests 13000 --drain-seconds 30 --out $OUT > $OUT.load.log 2>&1
grep -E "RssAnon|RssFile" /proc/$SP/status | tr -s ' ' | tr '\n' ' '; echo " (after load)"
T0=$(date +%s.%N); kill $SP; wait $SP 2>/dev/null; T1=$(date +%s.%N)
echo "shutdown $(echo "$T1 - $T0" | bc) s"
