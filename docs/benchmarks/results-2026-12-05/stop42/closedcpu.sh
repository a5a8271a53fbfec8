#!/bin/bash
# usage: closedcpu.sh BIN DIR N P [STORE]: N queries, P at a time; wall, CPU ms a question (perf stat task-clock)
BIN=$1; DIR=$2; N=$3; P=$4; STORE=${5:-store-1m.db}
cd /tmp/s39
PARTICLES_API_RATE_LIMIT_PER_MINUTE=0 ./$BIN --config load.yaml serve --http --store $DIR/$STORE --listen 127.0.0.1:18081 --max-inflight 32 > closedcpu.server.log 2>&1 &
SP=$!
for i in $(seq 1 300); do curl -s -o /dev/null http://127.0.0.1:18081/health && break; sleep 0.5; done
for i in 1 2 3; do curl -s -o /dev/null -H 'content-type: application/json' -d '{"question": "warm up the coin markets"}' http://127.0.0.1:18081/query; done
perf stat -e task-clock -x, -o /tmp/closedcpu.stat -p $SP &
PP=$!; sleep 0.3
T0=$(date +%s.%N)
seq 1 $N | xargs -P $P -I{} curl -s -o /dev/null -H 'content-type: application/json' -d '{"question": "question {} about ledgers, coins and markets"}' http://127.0.0.1:18081/query
T1=$(date +%s.%N)
kill -INT $PP; wait $PP
CPU=$(grep task-clock /tmp/closedcpu.stat | cut -d, -f1)
echo "$BIN wall $(echo "$T1 - $T0" | bc) s; $(echo "scale=1; $N / ($T1 - $T0)" | bc) q/s; CPU $(echo "scale=1; $CPU / $N" | bc) ms a question"
kill $SP; wait $SP 2>/dev/null
