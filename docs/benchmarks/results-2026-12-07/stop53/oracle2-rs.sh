#!/bin/bash
# oracle2-rs.sh BIN: oracle2.py's cases D-H through particles-rs (uncached, and the cache's build)
B=$1; F=/work/main/tests/fixtures/stores; V=$F/coins-b.question.json; T=/tmp/s53/ors2/t.db
fresh() {
  rm -rf /tmp/s53/ors2 && mkdir -p /tmp/s53/ors2 && cp $F/coins-b.db $T
  if [ -n "$1" ]; then
    cols=$(sqlite3 $T "SELECT group_concat(name, ', ') FROM pragma_table_info('particles') WHERE name != 'id'")
    for c in $(seq 0 $(($1-1))); do sqlite3 $T "INSERT INTO particles (id, $cols) SELECT id || '-copy$c', $cols FROM particles WHERE status='ACTIVE' AND id NOT LIKE '%-copy%'"; done
  fi
  $B store install-journal --store $T >/dev/null 2>&1
}
ids() { sqlite3 $T "SELECT id FROM particles WHERE status='ACTIVE' AND embedding_json IS NOT NULL AND embedding_model_id='all-MiniLM-L6-v2' ORDER BY rowid"; }
q() { sqlite3 $T "$1"; }
run() { for mode in "--no-sidecar" ""; do rm -f $T.particles-rs.sidecar; printf '%s %s: ' "$1" "${mode:-cached}"; $B query q --store $T --vector-file $V $mode 2>&1 >/dev/null | grep -v "^error: query on" | head -2 | tr "\n" " "; echo; done; }
fresh; early=$(ids | sed -n 2p); late=$(ids | tail -2 | head -1)
q "UPDATE particles SET confidence_value=0.3, embedding_json='[0.5, oops]', asserted_at='garbage' WHERE id='$early'; UPDATE particles SET confidence_value=0.6 WHERE id='$late'"
run "D one row: bad JSON and asserted_at"
fresh; q "UPDATE particles SET confidence_value=0.3, particle_type='BAD_EARLY' WHERE id='$early'; UPDATE particles SET confidence_value=0.6, asserted_at='garbage' WHERE id='$late'"
run "E early type (0.3), late asserted_at (0.6)"
fresh; q "UPDATE particles SET confidence_value=0.3, particle_type='BAD_EARLY' WHERE id='$early'; UPDATE particles SET confidence_value=0.6, embedding_json=CAST(X'5B302E352C20FF5D' AS TEXT) WHERE id='$late'"
run "F early type (0.3), late embedding not UTF-8 (0.6)"
fresh 40; first=$(ids | head -1); last=$(ids | tail -1)
q "UPDATE particles SET confidence_value=0.001, particle_type='BAD_FIRST' WHERE id='$first'; UPDATE particles SET confidence_value=0.999, asserted_at='garbage' WHERE id='$last'"
run "G type in the first partition (0.001), asserted_at in a later one (0.999)"
fresh; claimless=$(sqlite3 $T "SELECT id FROM particles WHERE status='ACTIVE' AND embedding_json IS NOT NULL AND structured_claim_json IS NULL LIMIT 1")
q "UPDATE particles SET structured_claim_generated_at='garbage' WHERE id='$claimless'"
run "H a claim-less row's structured_claim_generated_at alone"
fresh 40; first=$(ids | head -1); last=$(ids | tail -1)
q "UPDATE particles SET confidence_value=0.001, particle_type='BAD_FIRST' WHERE id='$first'; UPDATE particles SET confidence_value=0.999, embedding_json=CAST(X'5B302E352C20FF5D' AS TEXT) WHERE id='$last'"
run "I type in the first partition (0.001), text not UTF-8 in a later one (0.999)"
fresh; other=$(sqlite3 $T "SELECT id FROM particles WHERE status='ACTIVE' AND embedding_json IS NOT NULL AND embedding_model_id != 'all-MiniLM-L6-v2' ORDER BY rowid LIMIT 1")
q "UPDATE particles SET asserted_at='garbage' WHERE id='$other'"
run "J another model's row, asserted_at alone"
