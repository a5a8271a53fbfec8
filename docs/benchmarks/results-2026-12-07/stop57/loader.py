"""Per question, the loader's stages (decode + sql_fetch) before and after, medians over rounds of two A/B dirs; by link count.
usage: python3 loader.py DIR:ROUNDS..."""
import json, sqlite3, statistics as st, sys
db = sqlite3.connect("file:/tmp/s54/ql/stores/qlat-s20261017-n100000-rs1.db?mode=ro", uri=True)
def n(s): return db.execute("SELECT count(*) FROM particle_subjects WHERE subject_id = ?", (s,)).fetchone()[0]
per = {"before": {}, "after": {}}
for arg in sys.argv[1:]:
    d, R = arg.split(":")
    for b in per:
        for r in range(1, int(R) + 1):
            for s in json.load(open(f"{d}/{b}-subj-r{r}.json"))["samples"][1:]:
                per[b].setdefault((s["question_index"], s["subject_id"]), []).append(
                    (s["stages"]["decode"] + s["stages"]["sql_fetch"]) * 1e3)
bands = [(0, 100), (100, 500), (500, 10**9)]
for lo, hi in bands:
    rows = [(k, st.median(per["before"][k]), st.median(per["after"][k])) for k in per["before"] if lo <= n(k[1]) < hi]
    if not rows: continue
    b = sum(r[1] for r in rows); a = sum(r[2] for r in rows)
    print(f"links {lo}-{hi}: {len(rows)} questions, loader (decode+sql) summed over question medians: before {b:.2f} ms, after {a:.2f} ms ({(1 - a / b) * 100:.0f}% less)")
