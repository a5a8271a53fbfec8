"""Per question of the subject cells in A/B dirs, a time (`total`: the whole
question; `loader`: the `decode` and `sql_fetch` stages), the median over the
rounds, summed by the subject's link count.
usage: python3 bands.py total|loader LABEL_BEFORE LABEL_AFTER DIR:ROUNDS..."""
import json, sqlite3, statistics as st, sys
db = sqlite3.connect("file:/tmp/s54/ql/stores/qlat-s20261017-n100000-rs1.db?mode=ro", uri=True)
def n(s): return db.execute("SELECT count(*) FROM particle_subjects WHERE subject_id = ?", (s,)).fetchone()[0]
what, lb, la = sys.argv[1:4]
def seconds(s):
    return s["total_seconds"] if what == "total" else s["stages"]["decode"] + s["stages"]["sql_fetch"]
per = {"before": {}, "after": {}}
for arg in sys.argv[4:]:
    d, R = arg.split(":")
    for b in per:
        for r in range(1, int(R) + 1):
            for s in json.load(open(f"{d}/{b}-subj-r{r}.json"))["samples"][1:]:
                per[b].setdefault((s["question_index"], s["subject_id"]), []).append(seconds(s) * 1e3)
for lo, hi in [(0, 100), (100, 500), (500, 10**9)]:
    rows = [(st.median(per["before"][k]), st.median(per["after"][k])) for k in per["before"] if lo <= n(k[1]) < hi]
    b = sum(r[0] for r in rows); a = sum(r[1] for r in rows)
    print(f"links {lo}-{hi if hi < 10**9 else 'up'}: {len(rows)} questions, {what} time summed over question medians: "
          f"{lb} {b:.2f} ms, {la} {a:.2f} ms ({la} / {lb}: {a / b:.2f})")
