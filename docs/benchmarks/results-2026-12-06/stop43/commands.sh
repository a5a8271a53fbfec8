#!/bin/bash
# Stop 43's measurements on the Zen 4 host (binary: `cargo build --release -p particles-cli` at 123073c).
# The 100k store and the warm cells (five runs each, the warm cells removed between runs):
W=/tmp/s43/ql
particles-rs benchmark query-latency run --work-dir $W --sizes 100k --cold-runs 1 --no-encoder   # fixed question vectors, as the rows
particles-rs benchmark query-latency run --work-dir $W --sizes 100k --cold-runs 1                # the encoder in each question
# p50 of total_seconds over the 50 samples of cells/n100000-warm-{unfiltered,subject}.json, over floors.f32_scan_single_thread_seconds
# Open loop at 100k, the encoder in the loop, the engine started by the benchmark:
particles-rs benchmark serve-load --store $W/stores/qlat-s20261017-n100000-rs1.db --rates 150,200,250 --step-seconds 30 --max-requests 13000 --drain-seconds 30 --out sl100
particles-rs benchmark serve-load --store $W/stores/qlat-s20261017-n100000-rs1.db --rates 5,120 --step-seconds 30 --max-requests 13000 --drain-seconds 30 --out sl100b
