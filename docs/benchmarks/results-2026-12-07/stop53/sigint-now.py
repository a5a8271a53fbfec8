import subprocess, sys, time, signal, os, glob
binary, store = sys.argv[1], sys.argv[2]
side = store + ".particles-rs.sidecar"
if os.path.exists(side): os.remove(side)
out = open("/tmp/s53/sigint.out", "wb")
p = subprocess.Popen([binary, "query", "--store", store, "--json", "what do we know about coffee"], stdout=out, stderr=subprocess.DEVNULL, restore_signals=True)
t0 = time.time()
while os.path.getsize("/tmp/s53/sigint.out") == 0: time.sleep(0.005)
t1 = time.time()
p.send_signal(signal.SIGINT); rc = p.wait()
print(f"answer after {t1-t0:.1f} s; SIGINT at once; exit {rc}")
d = os.path.dirname(store)
for f in glob.glob(d + "/.particles-rs-sidecar-*"): print("left:", os.path.basename(f), os.path.getsize(f))
