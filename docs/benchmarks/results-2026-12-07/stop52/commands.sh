# Stop 52, the commands behind the figures. Host: AMD EPYC family 25 model 1 (Zen 3, AVX2,
# no AVX-512), 2 cores, 24 GiB: not the Zen 4 host of stops 43-51.
# Stores: the benchmark generator's, seed 20261017 (stop 50's work dir):
S=qlat-s20261017-n100000-rs1.db; S1M=qlat-s20261017-n1000000-rs1.db
# Binaries: base = a97e7ab (stop 51); lead2 = base + two encoder passes at once (lead2.patch, not kept);
# nice = base + the scan on rayon's pool at nice 5 (scan-nice.patch, not kept);
# typed = 055f895; bytes = fab48ce; fold = the interner's foldhash (the stop's code).

# The 100k load, base and lead2 in ABBA order, then nice and base in ABBA order (sl-*.md, sl-*.json),
# and base at 10/s (sl-base-10: --rates 10 --drain-seconds 10):
BIN benchmark serve-load --store $S --rates 100,150,200 --step-seconds 30 --max-requests 13000 --drain-seconds 30 --out sl-BIN-N
# The profile at 200/s (the step's own table: prof200-base.md; the perf shares: load-profile-200.txt,
# quoted in serve-load.md; the gemm share summed over the whole report with `grep -i gemm`):
BIN benchmark serve-load --store $S --rates 200 --step-seconds 40 --max-requests 13000 --drain-seconds 20 --out prof200 &
sleep 27; perf record -a -F 999 -g -- sleep 15

# The uncached 100k query, one thread (uncached100k.txt: binary, wall s, user s, sys s), five rounds:
for b in base typed bytes fold; do /usr/bin/time -f "$b %e %U %S" $b query --store $S --no-sidecar --json "what do we know about coffee"; done

# The `first` cells (the sidecar removed before each; ../stop51/first.sh):
bash ../stop51/first.sh BIN n100000-first-unfiltered.json OUT    # first-100k.txt (base, fold)
bash ../stop51/first.sh BIN n1000000-first-unfiltered.json OUT   # first-1m.txt (base, fold);
#   first-1m-typed.txt: base and typed (055f895) before the bytes change, its first base run cold
#   (sql_fetch 22.2 s: the store's pages not yet cached), not quoted.
# The answers compared (the uncached query's JSON, before against after; only query.now differs):
python3 -c 'import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); [d["query"].pop("now") for d in (a,b)]; print(a==b)' out-base.json out-fold.json
# The build profiles (build-profile-100k.txt after fab48ce, build-profile-1m.txt with 055f895):
PARTICLES_SIDECAR_DIR=EMPTY_DIR perf record -F 2999 -g BIN query --store $S --json "what do we know about coffee"
PARTICLES_SIDECAR_DIR=EMPTY_DIR perf record -F 499 BIN query --store $S1M --json "what do we know about coffee"

# The 1M load (sl1m.md, sl1m.json), the stop's code, the server started from stop 50's sidecar
# without a half copy, copied into an empty directory named by PARTICLES_SIDECAR_DIR:
PARTICLES_SIDECAR_DIR=DIR BIN benchmark serve-load --store $S1M --rates 10,20,30,40 --step-seconds 30 --max-requests 2000 --drain-seconds 30 --out sl1m
# The AVX2 half tile alone (half-tile-cost.txt):
cargo run --release -p particles-candidates --example half_tile_cost -- 100000 Q   # Q = 1 2 3 4 5 6 7 8 12
# The warm cells (warm-cells.txt, warm/): stop 50's n100000-warm-{unfiltered,subject}.json with result_path changed,
# five rounds, then the page-cache check:
BIN benchmark query-latency cell SPEC
python3 -c "import os; fd=os.open('$S', os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)"
