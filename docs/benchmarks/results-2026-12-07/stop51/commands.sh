#!/bin/sh
# Stop 51 (2026-12-07), AMD EPYC family 25 model 17 (Zen 4), 2 cores, 24 GiB.
# Stores: benchmark query-latency run --work-dir W --sizes 100k|1M --cold-runs 1 --no-encoder (seed 20261017).
# before = stop 50's code; split = split-build.patch applied (not kept).

# The first query, alternating binaries (first.sh removes the sidecar first):
./first.sh BEFORE W/specs/n100000-first-unfiltered.json out.json
./first.sh SPLIT  W/specs/n100000-first-unfiltered.json out.json
./first.sh BEFORE W/specs/n1000000-first-unfiltered.json out.json
./first.sh SPLIT  W/specs/n1000000-first-unfiltered.json out.json

# The query command's wall time and peak RSS, no sidecar:
/usr/bin/time -f "%e s %U user %S sys %M KB" BIN query --store STORE --sidecar-dir EMPTY_DIR --json "what do we know about coffee"

# SQLite's whole file mapped (a build setting, not kept):
LIBSQLITE3_FLAGS="-DSQLITE_MAX_MMAP_SIZE=1099511627776" cargo build --release -p particles-cli

# The CPU of a 1M first query, each second:
./cpu.sh BEFORE

# 1M serve-load from a sidecar without a half copy, ABBA (stop 49's sl1m.sh):
#   quiet-r3, mend-r3, mend-r4, quiet-r4
RUST_LOG=info PARTICLES_SIDECAR_DIR=DIR BIN benchmark serve-load --store STORE_1M \
  --rates 10,20,30,40 --step-seconds 30 --max-requests 2000 --drain-seconds 30 --out OUT

# The same at 10 then 30/s with page faults each second (faults.sh, this host's paths):
#   quiet-f1, mend-f1, mend-f2, quiet-f2
RUST_LOG=info PARTICLES_SIDECAR_DIR=DIR BIN benchmark serve-load --store STORE_1M \
  --rates 10,30 --step-seconds 30 --max-requests 2000 --drain-seconds 20 --out OUT

# serve --stdio on the 1M store, an empty sidecar directory (stdio.py), before, after, before, after:
python3 stdio.py BIN STORE_1M 40

# The same session, with the anonymous mappings read after the swap:
python3 stdio.py BIN STORE_1M 30 --smaps
