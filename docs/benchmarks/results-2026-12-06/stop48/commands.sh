# Stop 48 (AMD EPYC family 25 model 17, Zen 4, 2 cores), the commands behind the figures.
S=qlat-s20261017-n100000-rs1.db     # the benchmark generator's 100k store (stop 43's work dir)
S1M=qlat-s20261017-n1000000-rs1.db  # and its 1M store, sidecar beside it
# before = c8fd51c's half tile in this stop's tree (= b0af854); after = f534605 + a1750ee
cargo run --release -p particles-candidates --example half_tile_cost -- 100000 Q   # Q = 1 2 3 4 8
# three rounds: before, after; before, after; after, before:
BIN benchmark serve-load --store $S --rates 100,150,200 --step-seconds 30 --max-requests 13000 --drain-seconds 30 --out sl100-BIN-rN
BIN benchmark serve-load --store $S1M --rates 10,20,30,40 --step-seconds 30 --max-requests 2000 --drain-seconds 30 --out sl1m-after
# the load profiles: a step of 40 s at R = 100 and 200, and 25 s into it
BIN benchmark serve-load --store $S --rates R --step-seconds 40 --max-requests 13000 --drain-seconds 20 --out prof &
sleep 25; perf record -a -F 999 -g -- sleep 15
# the ladder, the code that stands (b03f1ab):
BIN benchmark serve-load --store $S --rates 10,140,160,180 --step-seconds 30 --max-requests 13000 --drain-seconds 30 --out sl100-ladder
