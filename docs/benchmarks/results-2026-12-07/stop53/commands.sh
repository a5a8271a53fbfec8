# Stop 53, AMD EPYC family 25 model 1 (Zen 3), 2 cores, 24 GiB. Stores and specs: stop 50's
# (/tmp/s50/ql/stores, /tmp/s50/ql/specs). Binaries: after3 = 146051c, json2 = e9e236d's code,
# sweep = 5954002, /tmp/s52/fold = 5657eb5 (stop 52's last).

# The first query's build by thread, and the write's profile (before):
perf record -s -F 499 -o first1m.perf -- after3 benchmark query-latency cell n1000000-first-unfiltered.json.run53
perf report -i first1m.perf -T --stdio                      # per-thread totals
perf script -i first1m.perf -F tid,time | ...               # samples per thread per second
perf report -i first1m.perf --time 38301.5,38315.5 --sort sym --stdio --no-children   # build-profile-1m.txt
perf record -g -F 499 -D 15000 -o write1m.perf -- after3 benchmark query-latency cell ...
perf report -i write1m.perf --time 38398.0,38407.3 --children --sort sym --stdio -g none   # write-profile-1m-before.txt

# The host's page-cache write floor:
dd if=/dev/zero of=ddtest bs=16M count=110     # 5.33-5.45 s cold, 1.55 s when the pages were used before

# The write, alternating (wr1m.txt, wr100k.txt):
for i in 1 2 3; do for b in after3 json2; do ./wr.sh ./$b n1000000-first-unfiltered.json wr-$b-$i.json; done; done
for i in 1 2 3; do for b in after3 json2; do ./wr.sh ./$b n100000-first-unfiltered.json wr100-$b-$i.json; done; done

# Ctrl-C after the answer (sigint.txt), then one write by the new binary in the same directory:
python3 sigint.py ./json2 qlat-s20261017-n1000000-rs1.db
rm -f qlat-s20261017-n100000-rs1.db.particles-rs.sidecar; ./sweep query --store qlat-s20261017-n100000-rs1.db --json "what do we know about coffee"
ls -la /tmp/s50/ql/stores | grep sidecar

# Rows with two faults, the reference (oracle.txt) and particles-rs before and after (oracle-rs.txt):
.reference/venv/bin/python oracle.py t.db          # t.db: a copy of tests/fixtures/stores/coins-b.db
./oracle-rs.sh /tmp/s52/fold; ./oracle-rs.sh ./sweep

# Rows with faults met while fetching (oracle2.txt), and particles-rs before and after (oracle2-rs.txt):
.reference/venv/bin/python oracle2.py tests/fixtures/stores/coins-b.db /tmp/s53/t2.db
./oracle2-rs.sh /tmp/s52/fold; ./oracle2-rs.sh ./final

# The write again with the final binary (wr1m-final.txt):
for i in 1 2; do for b in after3 final; do ./wr.sh ./$b n1000000-first-unfiltered.json wrf-$b-$i.json; done; done

# Ctrl-C with the final binary, 100k (sigint-final.txt):
python3 sigint-now.py ./final2 qlat-s20261017-n100000-rs1.db          # SIGINT at once: an empty temp file
python3 sigint-d.py ./final2 qlat-s20261017-n100000-rs1.db 0.12       # 0.12 s after the answer: 142 MB
sleep 10; rm -f qlat-s20261017-n100000-rs1.db.particles-rs.sidecar; ./final2 query --store qlat-s20261017-n100000-rs1.db --json "what do we know about coffee"
