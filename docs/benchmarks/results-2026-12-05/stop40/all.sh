#!/bin/bash
# Alternated runs, old (stop 39, f8229e3) against new (this stop); results in /tmp/s40/out
cd /tmp/s39
mkdir -p /tmp/s40/out
for round in 1 2; do
  for b in prs-ext7 prs-plan; do
    ./timing.sh $b a > /tmp/s40/out/timing-1m-1row-$b-$round.txt 2>&1
    ./many.sh $b a 10 > /tmp/s40/out/many-1m-10rows-$b-$round.txt 2>&1
    ./many.sh $b a 2000 > /tmp/s40/out/many-1m-2000rows-$b-$round.txt 2>&1
    ./many100.sh $b c100 1 > /tmp/s40/out/many-100k-1row-$b-$round.txt 2>&1
    ./many100.sh $b c100 10 > /tmp/s40/out/many-100k-10rows-$b-$round.txt 2>&1
  done
done
for i in 1 2 3; do for b in prs-ext7 prs-plan; do /usr/bin/time -f "$b %e s" ./$b --config load.yaml query --store a/store-1m.db --json "what changed in the coin markets" 2>>/tmp/s40/out/oneshot-1m.txt >/tmp/s40/out/oneshot-$b.json; done; done
echo DONE > /tmp/s40/out/DONE
