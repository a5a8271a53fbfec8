# Per-row error norms of an f16 copy and an int8 copy (per-row scale, max|v|/127),
# over 2,000 random rows of the benchmark's 100k store; and the same for the
# benchmark's question vectors quantised to int8 (per-question scale).
import json, math, random, sqlite3, struct, statistics, sys
db = sys.argv[1]; qfile = sys.argv[2]
c = sqlite3.connect(f'file:{db}?mode=ro', uri=True)
maxr = c.execute('select max(rowid) from particles').fetchone()[0]
random.seed(46)
ids = random.sample(range(1, maxr + 1), 2000)
rows = [json.loads(t) for (t,) in c.execute(
    f"select embedding_json from particles where rowid in ({','.join(map(str, ids))}) and embedding_json is not null")]
def f16(x): return struct.unpack('e', struct.pack('e', x))[0]
def norm(v): return math.sqrt(sum(x * x for x in v))
e16, e8, rel16, rel8 = [], [], [], []
for v in rows:
    n = norm(v)
    a = norm([x - f16(x) for x in v])
    s = max(abs(x) for x in v) / 127
    b = norm([x - s * max(-127, min(127, round(x / s))) for x in v])
    e16.append(a); e8.append(b); rel16.append(a / n); rel8.append(b / n)
qs = json.load(open(qfile))['vectors']
eq = []
for q in qs:
    s = max(abs(x) for x in q) / 127
    eq.append(norm([x - s * max(-127, min(127, round(x / s))) for x in q]) / norm(q))
med = statistics.median
print(f'{len(rows)} rows, {len(rows[0])} dims')
print(f'|v - f16(v)| / |v|  median {med(rel16):.6f}  max {max(rel16):.6f}')
print(f'|v - int8(v)| / |v| median {med(rel8):.6f}  max {max(rel8):.6f}')
print(f'ratio int8 / f16 (medians) {med(rel8) / med(rel16):.1f}')
print(f'{len(qs)} questions: |q - int8(q)| / |q| median {med(eq):.6f}  max {max(eq):.6f}')
print(f'int8 rows and int8 questions against f16 rows (medians, first order): {(med(rel8) + med(eq)) / med(rel16):.1f}x')
