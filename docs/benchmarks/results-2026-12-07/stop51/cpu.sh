#!/bin/bash
# cpu.sh BIN: a 1M first query (the query command, an empty sidecar
# directory), and the process's CPU each second, in percent of one core.
S=${STORE_1M:?set STORE_1M to the 1M store}
sc=$(mktemp -d)
"$1" query --store "$S" --sidecar-dir "$sc" --json "what do we know about coffee" >/dev/null 2>&1 &
pid=$!
tck=$(getconf CLK_TCK); prev=0; t=0
while kill -0 $pid 2>/dev/null; do
  cur=$(awk '{print $14+$15}' /proc/$pid/stat 2>/dev/null) || break
  [ -n "$cur" ] && echo "$t $(( (cur-prev) * 100 / tck ))%"; prev=${cur:-$prev}; t=$((t+1)); sleep 1
done | tr '\n' ' '; echo
rm -rf "$sc"
