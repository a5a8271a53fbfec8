#!/bin/bash
# faults.sh: 1M serve-load at 10 then 30/s (the swap lands in the 10/s step), /proc/vmstat pgfault each second
for run in quiet-f1 mend-f1 mend-f2 quiet-f2; do
  bin=/tmp/s50/${run%-*}
  mkdir -p /tmp/s50/sc-c; cp /tmp/s50/nohalf.sidecar /tmp/s50/sc-c/qlat-s20261017-n1000000-rs1.db.particles-rs.sidecar; sync; sleep 3
  ( while true; do echo "$(date +%s) $(awk '/^pgfault /{print $2}' /proc/vmstat)"; sleep 1; done ) > /tmp/s51/sl/$run.pgfault &
  mon=$!
  RUST_LOG=info PARTICLES_SIDECAR_DIR=/tmp/s50/sc-c $bin benchmark serve-load --store /tmp/s50/ql/stores/qlat-s20261017-n1000000-rs1.db --rates 10,30 --step-seconds 30 --max-requests 2000 --drain-seconds 20 --out /tmp/s51/sl/f-$run > /tmp/s51/sl/f-$run.out 2>&1
  kill $mon
  echo "$run done $(date -u +%T)"
done
echo ALLDONE
