#!/bin/bash
BIN=$1; DIR=$2
DB=$(ls $DIR/*.db | head -1)
PARTICLES_API_RATE_LIMIT_PER_MINUTE=0 ./$BIN --config load.yaml serve --http --store $DB --listen 127.0.0.1:18081 > idle.server.log 2>&1 &
SP=$!
for i in $(seq 1 300); do curl -s -o /dev/null http://127.0.0.1:18081/health && break; sleep 0.5; done
sleep 5; A=$(awk '{print $14+$15}' /proc/$SP/stat); sleep 30; B=$(awk '{print $14+$15}' /proc/$SP/stat)
echo "$BIN idle CPU over 30 s: $(( (B - A) * 10 )) ms"
kill $SP; wait $SP 2>/dev/null
