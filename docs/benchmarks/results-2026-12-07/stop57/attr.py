import sys, collections, re
interest = ["subject_particle_ids", "CacheState::row_of", "settle_subject_claims", "particles_at_rowids", "band::rows::compute",
            "particles_query::finish", "semantic_response", "scan_lanes", "select_from", "sidecar::open", "coverage_gap_entries",
            "narrative_constituents", "find_subject", "materialise", "run_query", "Pass::run", "read_snapshot"]
samples = open(sys.argv[1]).read().split("\n\n")
count = collections.Counter(); total = 0; under = 0
for s in samples:
    frames = [l.strip().split(None, 1)[1] if len(l.strip().split(None,1))>1 else "" for l in s.strip().splitlines()]
    if not frames: continue
    total += 1
    if not any("read_snapshot" in f for f in frames): continue
    under += 1
    for f in frames:  # innermost first
        hit = next((i for i in interest if i in f), None)
        if hit:
            count[hit] += 1; break
print("total", total, "under read_snapshot", under)
for k, v in count.most_common(): print(f"{v:6d} {k}")
