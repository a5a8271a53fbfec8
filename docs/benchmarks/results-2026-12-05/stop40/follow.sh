#!/bin/bash
# usage: follow.sh BIN DIR N [PAUSE]: the first answers after commits of N rows, asked PAUSE s after each commit
BIN=$1; DIR=$2; N=$3; PAUSE=${4:-1}
DB=$(ls $DIR/*.db | head -1); PORT=18081
Q='{"question": "what changed in the coin markets"}'
ask() { echo "$1 $(curl -s -o /dev/null -D - -H 'content-type: application/json' -d "$Q" http://127.0.0.1:$PORT/query | grep -i '^server-timing' | tr -d '\r' | grep -o 'pass;dur=[0-9.]*\|total;dur=[0-9.]*' | tr '\n' ' ')"; }
PARTICLES_API_RATE_LIMIT_PER_MINUTE=0 ./$BIN --config load.yaml serve --http --store $DB --listen 127.0.0.1:$PORT --max-inflight 32 > follow.server.log 2>&1 &
SP=$!
for i in $(seq 1 300); do curl -s -o /dev/null http://127.0.0.1:$PORT/health && break; sleep 0.5; done
sleep 2; ask warm; ask warm; ask warm
for k in 1 2 3; do
sqlite3 $DB "UPDATE particles SET confidence_value = confidence_value WHERE rowid IN (SELECT rowid FROM particles WHERE status = 'ACTIVE' ORDER BY rowid LIMIT $N OFFSET $((k * 7919)))"
sleep $PAUSE
ask write-first; ask next
done
kill $SP; wait $SP 2>/dev/null
