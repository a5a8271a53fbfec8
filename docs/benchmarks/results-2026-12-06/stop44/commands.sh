#!/bin/bash
# Stop 44's measurements on the Zen 4 host (AMD EPYC family 25 model 17, 2 cores, 32 MiB L3).
# before = aa35d30 (`cargo build --release -p particles-cli`, copied to prs-before),
# after  = 3383ddf for the sl100-*-r1/r2 runs, 3865df1 for everything else (prs-after).
# The 100k store and work directory are stop 43's (results-2026-12-06/stop43/commands.sh).
W=/tmp/s43/ql
# The half tile alone, old and new side by side (the old one from a worktree of aa35d30
# with this example copied in, timing its `half_tile_kernel()`):
cargo run --release -p particles-candidates --example half_tile_cost           # half-tile-cost.txt
# The ranking alone, bare and with the margin (band_cost built at aa35d30 and at 6872182),
# 20 passes of 8 questions, p50 per mode and the run's task-clock, alternating four times:
PASSES=20 perf stat -e task-clock target/release/examples/band_cost $W/stores/qlat-s20261017-n100000-rs1.db $W/questions-s20261017.json 8
# The warm cells, five runs of each binary, alternating, the warm cells removed before each run:
prs-before benchmark query-latency run --work-dir $W --sizes 100k --cold-runs 1 --no-encoder
prs-after  benchmark query-latency run --work-dir $W --sizes 100k --cold-runs 1 --no-encoder
# -> warm-100k-before-after.txt (p50 of total_seconds over the floor, and of the scoring stage)
# Open loop at 100k, three rounds of before and after:
prs-before benchmark serve-load --store $W/stores/qlat-s20261017-n100000-rs1.db --rates 150,200,250 --step-seconds 30 --max-requests 13000 --drain-seconds 30 --out sl100-before-rN
prs-after  benchmark serve-load --store $W/stores/qlat-s20261017-n100000-rs1.db --rates 150,200,250 --step-seconds 30 --max-requests 13000 --drain-seconds 30 --out sl100-after-rN
# Where the CPU goes at 150/s (after): perf record -a -F 499 -- sleep 25 during a 40 s step at 150/s.
