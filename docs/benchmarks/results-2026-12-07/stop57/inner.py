import sys, collections
target = sys.argv[2]; depth = int(sys.argv[3]) if len(sys.argv) > 3 else 1
samples = open(sys.argv[1]).read().split("\n\n")
c = collections.Counter()
for s in samples:
    frames = [l.strip().split(None, 1)[1] if len(l.strip().split(None,1))>1 else "?" for l in s.strip().splitlines()]
    if not any(target in f for f in frames): continue
    c[" <- ".join(f[:50] for f in frames[:depth])] += 1
for k, v in c.most_common(25): print(f"{v:5d} {k}")
