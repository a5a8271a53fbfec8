#!/bin/bash
# Stop 45's measurements on the Zen 4 host (AMD EPYC family 25 model 17, 2 cores, 32 MiB L3).
# before = c1de1b0, after = d9133dc (`cargo build --release -p particles-cli`, each copied aside).
# The 100k store and work directory are stop 43's (results-2026-12-06/stop43/commands.sh).
W=/tmp/s43/ql
# The warm cells, five runs of each binary, alternating, the warm cells removed before each run
# (`base` = before, `rowid` = after in warm-100k-before-after.txt):
prs-before benchmark query-latency run --work-dir $W --sizes 100k --cold-runs 1 --no-encoder
prs-after  benchmark query-latency run --work-dir $W --sizes 100k --cold-runs 1 --no-encoder
# -> warm-100k-before-after.txt: p50 of total_seconds over the floor, and p50 of the scoring stage.
# materialise.txt: the same command with a timer around `materialise` (query/src/lib.rs) and
# around `semantic_response`, printed to the cell's log; instrumentation for this stop only.
# Open loop at 100k, two rounds of before and after, alternating:
prs-before benchmark serve-load --store $W/stores/qlat-s20261017-n100000-rs1.db --rates 150,200,250 --step-seconds 30 --max-requests 13000 --drain-seconds 30 --out sl100-before-rN
prs-after  benchmark serve-load --store $W/stores/qlat-s20261017-n100000-rs1.db --rates 150,200,250 --step-seconds 30 --max-requests 13000 --drain-seconds 30 --out sl100-after-rN
# The whole-block half tile (be9f046) against d9133dc, same commands: band_cost built at each
# (`cargo build --release -p particles-query --example band_cost`), then
PASSES=20 BARE_ONLY=1 perf stat -e task-clock band_cost $W/stores/qlat-s20261017-n100000-rs1.db $W/questions-s20261017.json 30
PASSES=20 perf stat -e task-clock band_cost $W/stores/qlat-s20261017-n100000-rs1.db $W/questions-s20261017.json 30
PASSES=1 band_cost $W/stores/qlat-s20261017-n100000-rs1.db $W/questions-s20261017.json 60
# -> band-cost-whole-block.txt; the warm cells -> warm-100k-whole-block.txt; serve-load -> sl100-whole-*.
