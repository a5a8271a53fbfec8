#!/usr/bin/env python3
"""stdio.py BIN STORE SECONDS [--smaps]: a serve --stdio session on a store with an empty
sidecar directory: the first question (a rebuild), a second sent as soon as the
first is answered, then RssAnon each second for SECONDS, a third question, end
of input. Prints each answer's wall time, the cache route, RssAnon over time and
how long the process took to exit. With --smaps, the largest anonymous
mappings after the RssAnon samples."""
import json, os, subprocess, sys, tempfile, time

binary, store, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3])
smaps = "--smaps" in sys.argv[4:]
sidecars = tempfile.mkdtemp(prefix="stdio-sc-")
proc = subprocess.Popen([binary, "serve", "--stdio", "--store", store, "--sidecar-dir", sidecars],
                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

def anon():
    with open(f"/proc/{proc.pid}/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) // 1024
    return None

def ask(question):
    started = time.time()
    proc.stdin.write(json.dumps({"question": question, "top_k": 10}) + "\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    took = time.time() - started
    answer = json.loads(line)
    route = answer.get("cache", {}).get("route") if isinstance(answer.get("cache"), dict) else answer.get("cache")
    return took, route, answer

def sidecar_files():
    return sorted(os.listdir(sidecars))

def largest_anonymous(count=12):
    """The anonymous mappings, largest first: [range, name, Anonymous kB, AnonHugePages kB]."""
    maps, current = [], None
    for line in open(f"/proc/{proc.pid}/smaps"):
        parts = line.split()
        if "-" in parts[0] and not parts[0].endswith(":"):
            current = [parts[0], parts[5] if len(parts) > 5 else "", 0, 0]
            maps.append(current)
        elif parts[0] == "Anonymous:":
            current[2] = int(parts[1])
        elif parts[0] == "AnonHugePages:":
            current[3] = int(parts[1])
    maps.sort(key=lambda m: -m[2])
    print("anon total kB", sum(m[2] for m in maps))
    for m in maps[:count]:
        print("  ", m)

t1, r1, _ = ask("what do we know about coffee")
print(f"q1 {t1:.2f} s route {r1} anon {anon()} MiB files {sidecar_files()}", flush=True)
t2, r2, _ = ask("what do we know about tea")
print(f"q2 {t2:.2f} s route {r2} anon {anon()} MiB files {sidecar_files()}", flush=True)
trace = []
for second in range(seconds):
    time.sleep(1)
    trace.append(anon())
print("anon MiB each second:", " ".join(str(a) for a in trace), flush=True)
if smaps:
    largest_anonymous()
t3, r3, _ = ask("what do we know about sugar")
print(f"q3 {t3:.2f} s route {r3} anon {anon()} MiB files {sidecar_files()}", flush=True)
started = time.time()
proc.stdin.close()
proc.wait()
print(f"exit {time.time() - started:.2f} s code {proc.returncode} files {sidecar_files()}")
err = proc.stderr.read().strip()
if err:
    print("stderr:", err[:600])
subprocess.run(["rm", "-rf", sidecars])
