#!/bin/bash
# run.sh BIN STORE SIDECAR_DIR SECONDS OUT : a server started with an empty (or given)
# sidecar dir, its RssAnon/RssFile sampled every 0.5 s, one question every 5 s.
BIN=$1; STORE=$2; SC=$3; SECS=$4; OUT=$5
PORT=$((20000 + RANDOM % 20000))
PARTICLES_API_RATE_LIMIT_PER_MINUTE=0 $BIN serve --http --listen 127.0.0.1:$PORT --store $STORE --sidecar-dir $SC --log-format json > $OUT.log 2>&1 &
PID=$!
t0=$(date +%s.%N)
: > $OUT.mem
end=$(( $(date +%s) + SECS ))
n=0
while [ $(date +%s) -lt $end ]; do
  t=$(echo "$(date +%s.%N) - $t0" | bc)
  echo "$t $(grep -E 'RssAnon|RssFile' /proc/$PID/status | awk '{print $2}' | tr '\n' ' ')" >> $OUT.mem
  n=$((n+1))
  if [ $((n % 10)) -eq 0 ]; then
    code=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' -X POST http://127.0.0.1:$PORT/query -H 'content-type: application/json' -d '{"question":"what do we know about coffee","top_k":40}')
    echo "$t query $code" >> $OUT.mem
  fi
  sleep 0.5
done
python3 - $PID > $OUT.smaps <<'PY'
import sys,re
pid=sys.argv[1]
cur=None; rows=[]
for line in open(f"/proc/{pid}/smaps"):
    if re.match(r'^[0-9a-f]+-[0-9a-f]+ ', line):
        parts=line.split(None,5); lo,hi=[int(x,16) for x in parts[0].split('-')]
        cur=[parts[0], (hi-lo)//1024, 0, parts[5].strip() if len(parts)>5 else '']; rows.append(cur)
    elif line.startswith('Anonymous:'):
        cur[2]=int(line.split()[1])
rows.sort(key=lambda r:-r[2])
print("total anon kB", sum(r[2] for r in rows))
for r in rows[:15]: print(r)
PY
kill -INT $PID; wait $PID
echo "exit $?" >> $OUT.mem
