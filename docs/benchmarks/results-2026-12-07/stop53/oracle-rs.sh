#!/bin/bash
# oracle-rs.sh BIN: the three cases of oracle.py through particles-rs (uncached, and the cache's build)
B=$1; F=/work/main/tests/fixtures/stores; V=$F/coins-b.question.json
rm -rf /tmp/s53/ors && mkdir -p /tmp/s53/ors && cp $F/coins-b.db /tmp/s53/ors/t.db; T=/tmp/s53/ors/t.db
$B store install-journal --store $T >/dev/null 2>&1
early=$(sqlite3 $T "SELECT id FROM particles WHERE status='ACTIVE' AND embedding_json IS NOT NULL AND embedding_model_id='all-MiniLM-L6-v2' ORDER BY rowid LIMIT 1 OFFSET 1")
late=$(sqlite3 $T "SELECT id FROM (SELECT id, rowid r FROM particles WHERE status='ACTIVE' AND embedding_json IS NOT NULL AND embedding_model_id='all-MiniLM-L6-v2' ORDER BY rowid DESC LIMIT 2) ORDER BY r LIMIT 1")
q() { sqlite3 $T "$1"; }
run() { for mode in "--no-sidecar" ""; do rm -f $T.particles-rs.sidecar; printf '%s %s: ' "$1" "${mode:-cached}"; $B query q --store $T --vector-file $V $mode 2>&1 >/dev/null | grep -v "^error: query on" | head -2 | tr "\n" " "; echo; done; }
q "UPDATE particles SET confidence_value=0.3 WHERE id='$early'; UPDATE particles SET confidence_value=0.6 WHERE id='$late'"
q "UPDATE particles SET particle_type='BAD_LATE' WHERE id='$late'; UPDATE particles SET embedding_json='[0.5, oops]' WHERE id='$early'"
run "A early-emb(0.3) late-type(0.6)"
q "UPDATE particles SET confidence_value=0.1 WHERE id='$late'"
run "B early-emb(0.3) late-type(0.1)"
q "UPDATE particles SET confidence_value=0.6 WHERE id='$late'; UPDATE particles SET particle_type='BAD_EARLY' WHERE id='$early'"
run "C early both faults(0.3), late type(0.6)"
