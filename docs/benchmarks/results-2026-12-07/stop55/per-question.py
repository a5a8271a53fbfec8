"""Per-question figures of the subject cells in ab1/ and ab2/ (stop 55).

usage: python3 per-question.py STORE DIR...  (DIR holds {before,mmap}-subj-rN.json)
"""
import json, sqlite3, statistics as st, sys

db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
links = {}
def n_links(subject):
    if subject not in links:
        links[subject] = db.execute(
            "SELECT count(*) FROM particle_subjects WHERE subject_id = ?", (subject,)).fetchone()[0]
    return links[subject]

for d in sys.argv[2:]:
    for b in ["before", "mmap"]:
        for r in range(1, 6):
            S = json.load(open(f"{d}/{b}-subj-r{r}.json"))["samples"]
            t = sorted(s["total_seconds"] * 1e3 for s in S)
            big = [(s["total_seconds"] * 1e3 / n_links(s["subject_id"])) * 1e3
                   for s in S if n_links(s["subject_id"]) >= 500]
            print(f"{d} {b} r{r}: p50 {st.median(t):.2f} ms, p90 {t[int(0.9 * len(t))]:.2f} ms, "
                  f"over 3 ms {sum(x > 3 for x in t)} of {len(t)}, distinct subjects "
                  f"{len({s['subject_id'] for s in S})}, µs per link (subjects of 500+ links) "
                  f"{min(big):.0f}-{max(big):.0f}")
S = json.load(open(f"{sys.argv[-1]}/mmap-subj-r3.json"))["samples"]
print("\nlinks of the 50 questions' subjects, sorted:",
      sorted(n_links(s["subject_id"]) for s in S))
print("\none round (last DIR, mmap r3): ms, links, stages other / decode, results")
for s in sorted(S, key=lambda s: s["total_seconds"]):
    print(f"  {s['total_seconds']*1e3:7.2f} {n_links(s['subject_id']):5d} "
          f"{s['stages']['other']*1e3:6.2f} {s['stages']['decode']*1e3:6.2f} {s['results']:3d}")
