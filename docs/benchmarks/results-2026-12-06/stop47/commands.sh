#!/bin/bash
# Stop 47's measurements on the Zen 4 host (AMD EPYC family 25 model 17, 2 cores, 32 MiB L3).
# before = 6effb02 (the code of 2bb6c32), after = 9044b25; the examples built with
# `cargo build --release -p particles-query --example batch_cost --example band_cost`, the CLI with
# `cargo build --release -p particles-cli`, each copied aside.
W=/tmp/s43/ql                                   # stop 43's 100k work directory
S=$W/stores/qlat-s20261017-n100000-rs1.db
Q=$W/questions-s20261017.json
W1M=/tmp/s46/ql1m                               # stop 46's 1M work directory
S1M=$W1M/stores/qlat-s20261017-n1000000-rs1.db
Q1M=$W1M/questions-s20261017.json
# batch-band-1m.txt: three rounds alternating, before / s1 (4e56c7e) / s2 (after)
SIZES=8 batch_cost $S1M $Q1M 12
SIZES=8 perf stat -x, -e task-clock batch_cost $S1M $Q1M 16
SIZES=8 perf stat -e page-faults,task-clock batch_cost $S1M $Q1M 2    # and 12: faults a round
SIZES=8 perf record -F 1000 batch_cost $S1M $Q1M 24                    # the profiles quoted
# batch-band-100k.txt
SIZES=1,8,16 batch_cost $S $Q 20
# The open loop (sl100-*, sl1m-*): two rounds, before/after alternating
BIN benchmark serve-load --store $S --rates 150,200,250 --step-seconds 30 --max-requests 13000 --drain-seconds 30 --out sl100-BIN-rN
BIN benchmark serve-load --store $S1M --rates 40,50,60 --step-seconds 30 --max-requests 2000 --drain-seconds 30 --out sl1m-BIN-rN
# The ladders (after only)
BIN benchmark serve-load --store $S --rates 10,140,160,180,200 --step-seconds 30 --max-requests 13000 --drain-seconds 30 --out sl100-ladder-after
BIN benchmark serve-load --store $S1M --rates 5,22,30 --step-seconds 30 --max-requests 2000 --drain-seconds 30 --out sl1m-ladder-after
# The load profile at 100k (where a question's CPU goes under load), 200/s for 40 s, after:
BIN benchmark serve-load --store $S --rates 200 --step-seconds 40 --max-requests 13000 --drain-seconds 20 --out prof &
sleep 25; perf record -a -F 999 -g -- sleep 15
# warm-cells.txt: stop 44's ab.sh (the two warm cells removed, then)
BIN benchmark query-latency run --work-dir /tmp/s44/ql --sizes 100k --cold-runs 1 --no-encoder
# first-1m/: the 1M first query, its cell file removed before each run (only it runs)
rm W1M/cells-extra/n1000000-first-unfiltered.json
BIN benchmark query-latency run --work-dir $W1M --sizes 1M --cold-runs 1 --no-encoder
