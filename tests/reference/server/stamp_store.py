"""Stamps a store built by `create_all` with the reference's migration head.

    stamp_store.py STORE

The reference's engine migrates the store it serves on start and refuses one
without an `alembic_version` stamp; make_cases.py's stores have the head
schema but no stamp.

It also relabels relations whose `created_by` the reference's own model
refuses (its benchmark generator writes `query-latency-generator`, the hand
store `gen`) as EXTRACTOR_DIRECT, so that the engine's routes that read every
relation (`/links/suggest`) answer instead of raising. Ranking does not read
the label.
"""

import sqlite3, sys
from alembic.script import ScriptDirectory
from alembic.config import Config
from particles.db import alembic_paths
ini, loc = alembic_paths(); cfg = Config(str(ini)); cfg.set_main_option("script_location", str(loc))
head = ScriptDirectory.from_config(cfg).get_current_head()
db = sqlite3.connect(sys.argv[1])
db.execute("CREATE TABLE IF NOT EXISTS alembic_version (version_num VARCHAR(32) NOT NULL, CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))")
db.execute("DELETE FROM alembic_version"); db.execute("INSERT INTO alembic_version VALUES (?)", (head,))
from particles.core.schema import RelationCreatedBy
known = tuple(member.value for member in RelationCreatedBy)
db.execute(f"UPDATE particle_relations SET created_by = 'EXTRACTOR_DIRECT' "
           f"WHERE created_by NOT IN ({','.join('?' * len(known))})", known)
db.commit()
