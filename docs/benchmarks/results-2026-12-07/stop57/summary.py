"""Per-cell summary of subject cells: p50, p90, sum of question times (first question left out), µs per link for subjects of 500+ links.
usage: python3 summary.py DIR ROUNDS"""
import json, sqlite3, statistics as st, sys
db = sqlite3.connect("file:/tmp/s54/ql/stores/qlat-s20261017-n100000-rs1.db?mode=ro", uri=True)
links = {}
def n(s):
    if s not in links:
        links[s] = db.execute("SELECT count(*) FROM particle_subjects WHERE subject_id = ?", (s,)).fetchone()[0]
    return links[s]
d, R = sys.argv[1], int(sys.argv[2])
for b in ["before", "after"]:
    sums = []; big = []; p50 = []; p90 = []
    for r in range(1, R + 1):
        S = json.load(open(f"{d}/{b}-subj-r{r}.json"))["samples"]
        t = sorted(s["total_seconds"] * 1e3 for s in S)
        p50.append(st.median(t)); p90.append(t[int(0.9 * len(t))])
        sums.append(sum(s["total_seconds"] * 1e3 for s in S[1:]))
        big += [s["total_seconds"] * 1e6 / n(s["subject_id"]) for s in S if n(s["subject_id"]) >= 500]
    print(f"{b}: p50 {min(p50):.2f}-{max(p50):.2f} (median {st.median(p50):.2f}) ms; p90 {min(p90):.1f}-{max(p90):.1f} ms; "
          f"49 questions' sum {min(sums):.0f}-{max(sums):.0f} ms (median {st.median(sums):.0f}); "
          f"µs per link, 500+ links: median {st.median(big):.1f}, range {min(big):.1f}-{max(big):.1f}")
