#!/bin/bash
# oracle3-rs.sh BIN: oracle3.py's cases K-R through particles-rs: the delta (a sidecar written by a
# first query, then the rows changed and a second query), the as-of and window routes, the claim routes.
B=$1; F=/work/main/tests/fixtures/stores; V=$F/coins-b.question.json; D=/tmp/s54/or/rs; T=$D/t.db
fresh() { rm -rf $D && mkdir -p $D && cp $F/coins-b.db $T && $B store install-journal --store $T >/dev/null 2>&1; }
q() { sqlite3 $T "$1"; }
upd() { q "UPDATE particles SET $2 WHERE id='$1'"; }
err() { "$@" 2>&1 >/dev/null | grep -v "^error: query on" | head -2 | tr "\n" " "; echo; }
delta() { $B query q --store $T --vector-file $V >/dev/null 2>&1 || echo "first query failed"; }
cacheable=($(sqlite3 $F/coins-b.db "SELECT id FROM particles WHERE status='ACTIVE' AND embedding_json IS NOT NULL ORDER BY id"))
retired=($(sqlite3 $F/coins-b.db "SELECT id FROM particles WHERE status!='ACTIVE' AND embedding_json IS NOT NULL ORDER BY id"))
claims=($(sqlite3 $F/coins-b.db "SELECT id FROM particles WHERE status='ACTIVE' AND structured_claim_json IS NOT NULL ORDER BY id"))
a=${cacheable[3]}; b=${cacheable[10]}; c=${retired[0]}; early=${cacheable[5]}; late=${cacheable[20]}; ce=${claims[1]}; cl=${claims[5]}
NU="CAST(X'5B302E352C20FF5D' AS TEXT)"; DATED="valid_from='2024-01-01 00:00:00.000000'"
run() { printf '%s: ' "$1"; shift; err $B query q --store $T --vector-file $V "$@"; }
fresh; delta; upd $c "valid_from='garbage'"; run "K a retired row's valid_from (delta)"
fresh; delta; upd $c "embedding_json=$NU"; run "K2 a retired row's embedding not UTF-8 (delta)"
fresh; delta; upd $c "particle_type='BAD'"; run "K3 a retired row's type (delta)"
fresh; delta; upd $a "embedding_json='[0.5, oops]'"; upd $b "content=$NU"; run "L a's embedding, b's content not UTF-8 (delta)"
fresh; delta; upd $a "particle_type='BAD'"; upd $b "asserted_at='garbage'"; run "M a's type, b's asserted_at (delta)"
fresh; delta; upd $a "particle_type='BAD'"; upd $b "embedding_json='[0.5, oops]'"; run "M2 a's type, b's embedding (delta)"
fresh; delta; upd $a "particle_type='BAD'"; upd $c "asserted_at='garbage'"; run "M3 a's type, retired c's asserted_at (delta)"
fresh; upd $early "confidence_value=0.3, particle_type='BAD'"; upd $late "confidence_value=0.6, valid_from='garbage'"; run "N early type, late valid_from (as-of)" --as-of 2026-12-01
fresh; upd $early "confidence_value=0.3, particle_type='BAD'"; upd $late "confidence_value=0.6, embedding_json='[0.5, oops]'"; run "N2 early type, late embedding (as-of)" --as-of 2026-12-01
fresh; upd $early "confidence_value=0.3, $DATED, embedding_json='[0.5, oops]'"; upd $late "confidence_value=0.6, $DATED, retired_at='garbage'"; run "O early embedding, late retired_at, both dated (window)" --during 2000-01-01..2030-01-01
fresh; upd $ce "confidence_value=0.3, particle_type='BAD'"; upd $cl "confidence_value=0.6, retired_at='garbage'"; run "P early claim's type, late claim's retired_at (claims as-of)" --predicate weighs --as-of 2026-12-01
fresh; upd $ce "confidence_value=0.3, particle_type='BAD'"; upd $cl "confidence_value=0.6, content=$NU"; run "Q early claim's type, late claim's content not UTF-8 (claims)" --predicate weighs
fresh; upd $ce "confidence_value=0.3, $DATED, particle_type='BAD'"; upd $cl "confidence_value=0.6, $DATED, modality_classified_at='garbage'"; run "R early dated claim's type, late's modality_classified_at (window claims)" --predicate weighs --during 2000-01-01..2030-01-01
