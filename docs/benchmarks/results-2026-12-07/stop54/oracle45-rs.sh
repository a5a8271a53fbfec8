#!/bin/bash
# oracle45-rs.sh BIN: oracle4.py's and oracle5.py's cases through particles-rs (uncached and cached
# for the columns; the as-of, window and claim routes for rows they skip; the delta for an ACTIVE
# row without a vector). The CLI refuses an instant in the future, so the as-of cases ask at
# 2026-12-01 about rows asserted in 2099.
B=$1; F=/work/main/tests/fixtures/stores; V=$F/coins-b.question.json; D=/tmp/s54/or/rs45; T=$D/t.db
fresh() { rm -rf $D && mkdir -p $D && cp $F/coins-b.db $T && $B store install-journal --store $T >/dev/null 2>&1; }
upd() { sqlite3 $T "UPDATE particles SET $2 WHERE id='$1'"; }
err() { "$@" 2>&1 >/dev/null | grep -v "^error: query on\|^warning: skipped" | head -2 | tr "\n" " "; echo; }
run() { printf '%s: ' "$1"; shift; err $B query q --store $T --vector-file $V "$@"; }
NU="CAST(X'5B302E352C20FF5D' AS TEXT)"; DATED="valid_from='2024-01-01 00:00:00.000000'"
row=$(sqlite3 $F/coins-b.db "SELECT id FROM particles WHERE status='ACTIVE' AND embedding_json IS NOT NULL AND embedding_model_id='all-MiniLM-L6-v2' ORDER BY rowid LIMIT 1 OFFSET 4")
for column in born_retired content_norm_hash domain_hint modality_classifier modality_classifier_model; do
  fresh; upd $row "$column=$NU"; run "S $column not UTF-8, uncached" --no-sidecar; run "S $column not UTF-8, build"
done
for value in "'x'" 2 0.5 "X'00'"; do fresh; upd $row "born_retired=$value"; run "T born_retired = $value, uncached" --no-sidecar; run "T born_retired = $value, build"; done
fresh; upd $row "domain_hint=$NU, particle_type='BAD'"; run "U domain_hint not UTF-8 and a bad type, uncached" --no-sidecar; run "U the same, build"
cacheable=($(sqlite3 $F/coins-b.db "SELECT id FROM particles WHERE status='ACTIVE' AND embedding_json IS NOT NULL ORDER BY id"))
other=$(sqlite3 $F/coins-b.db "SELECT id FROM particles WHERE status='ACTIVE' AND embedding_json IS NOT NULL AND embedding_model_id != 'all-MiniLM-L6-v2' ORDER BY rowid LIMIT 1")
bare=$(sqlite3 $F/coins-b.db "SELECT id FROM particles WHERE status='ACTIVE' AND embedding_json IS NULL LIMIT 1")
claim=$(sqlite3 $F/coins-b.db "SELECT id FROM particles WHERE structured_claim_json IS NOT NULL ORDER BY id LIMIT 1")
later=${cacheable[7]}
fresh; upd $later "asserted_at='2099-01-01 00:00:00.000000', valid_from='garbage'"; run "V1 a row asserted after the instant, its valid_from (as-of)" --as-of 2026-12-01
fresh; upd $later "asserted_at='2099-01-01 00:00:00.000000', particle_type='BAD'"; run "V1b a row asserted after the instant, its type (as-of)" --as-of 2026-12-01
fresh; upd $other "$DATED, retired_at='garbage'"; run "V2 another model's dated row, its retired_at (window)" --during 2000-01-01..2030-01-01
fresh; upd $claim "asserted_at='2099-01-01 00:00:00.000000', retired_at='garbage'"; run "V3 a claim asserted after the instant, its retired_at (claims as-of)" --predicate weighs --as-of 2026-12-01
fresh; $B query q --store $T --vector-file $V >/dev/null 2>&1; upd $bare "valid_from='garbage'"; run "V4 an ACTIVE row without a vector, its valid_from (delta)"
fresh; $B query q --store $T --vector-file $V >/dev/null 2>&1; upd $bare "particle_type='BAD'"; run "V4b an ACTIVE row without a vector, its type (delta)"
