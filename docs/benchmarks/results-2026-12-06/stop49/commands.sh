# Stop 49 (AMD EPYC family 25 model 17, Zen 4, 2 cores, 24 GiB, ext4 with online discard), the commands behind the figures.
# before = b03f1ab (stop 48's last code commit); after = 48d20d0 (the write-behind, eager);
# after2 = + the written/opened split in the log; after3 = + the paced write; final = 41e63bf (+ the replaced state freed on the write-behind's thread).
S1M=/tmp/s46/ql1m/stores/qlat-s20261017-n1000000-rs1.db   # the benchmark generator's 1M store
S100k=/tmp/s43/ql/stores/qlat-s20261017-n100000-rs1.db
# A sidecar without a half copy, as a one-shot command writes it (kept as nohalf.sidecar):
particles-rs query --store $S1M --sidecar-dir sc-c --json "what do we know about coffee"
# serve-load at 1M, the server started from that sidecar (sl1m.sh, beside this file):
BIN benchmark serve-load --store $S1M --rates 10,20,30,40 --step-seconds 30 --max-requests 2000 --drain-seconds 30   # PARTICLES_SIDECAR_DIR=sc-c
#   first rounds (no sync after the copy): after-r1, before-r1; before-r2, after-r2
#   final rounds (sync after the copy):    final-r1, before-r3; before-r4, final-r2
# one 10/s step of 40 s, with RUST_LOG=info,particles_engine=debug (diag.sh): diag-10s-{eager,paced-only,retire}
# A server started with an empty sidecar dir (a rebuild), RssAnon/RssFile every 0.5 s, a question every 5 s,
# its largest anonymous mappings at the end (scenario-run.sh):
scenario-run.sh BIN $S1M EMPTY_DIR 100 OUT      # scenario-{before1m-r2,after1m-r2,final1m-rebuild}
scenario-run.sh BIN $S100k EMPTY_DIR 40 OUT     # scenario-{before,final}100k-rebuild
scenario-run.sh after $S1M DIR_WITH_FULL_SIDECAR 30 OUT   # scenario-after1m-open (a full sidecar opened)
# perf of the swap (eager binary, 10/s): perf record -a -g -F 499 -- sleep 28, two seconds after serve-load started
# eager-retire = 41e63bf with Pace::Eager in writeback.rs (a variant binary, not committed); diag.sh run alternately: er1, pr1, er2, pr2
