# Rows the as-of, window and claim loaders skip, and an ACTIVE row without a vector in a delta:
# the reference fetches them first, so a fault met while fetching fails the read. A copy of coins-b.db.
import asyncio, sqlite3, sys, shutil
from datetime import datetime
from sqlalchemy.ext.asyncio import create_async_engine, AsyncSession
from particles.store import particle_store as ps
from particles.store import candidate_cache as cc
src, path = sys.argv[1], sys.argv[2]
def fresh():
    shutil.copy(src, path)
    return sqlite3.connect(path)
def q(con, sql): return [r[0] for r in con.execute(sql)]
def upd(con, i, a): con.execute(f"UPDATE particles SET {a} WHERE id=?", (i,)); con.commit()
async def run(label, kind, changed=()):
    eng = create_async_engine(f"sqlite+aiosqlite:///{path}")
    async with AsyncSession(eng) as s:
        try:
            if kind == "delta":
                await cc._apply_changes(s, state, (1, b''), set(changed))
            elif kind == "as-of":
                await ps.get_particles_with_embeddings_as_of(s, datetime(2050, 1, 1))
            elif kind == "window":
                await ps.get_particles_in_window_scope(s, require_embedding=True)
            elif kind == "claims-as-of":
                await ps.get_particles_with_claims_as_of(s, datetime(2050, 1, 1))
            print(label, kind, "ok")
        except Exception as e:
            print(label, kind, type(e).__name__, str(e)[:110].replace("\n", " "))
    await eng.dispose()
async def build():
    eng = create_async_engine(f"sqlite+aiosqlite:///{path}")
    async with AsyncSession(eng) as s:
        st = await cc._build(s, (0, b''))
    await eng.dispose()
    return st
con = fresh(); state = asyncio.run(build())
cacheable = q(con, "SELECT id FROM particles WHERE status='ACTIVE' AND embedding_json IS NOT NULL ORDER BY id")
other = q(con, "SELECT id FROM particles WHERE status='ACTIVE' AND embedding_json IS NOT NULL AND embedding_model_id != 'all-MiniLM-L6-v2' ORDER BY rowid")[0]
bare = q(con, "SELECT id FROM particles WHERE status='ACTIVE' AND embedding_json IS NULL LIMIT 1")[0]
claim = q(con, "SELECT id FROM particles WHERE structured_claim_json IS NOT NULL ORDER BY id")[0]
later = cacheable[7]
DATED = "valid_from='2024-01-01 00:00:00.000000'"
con = fresh(); upd(con, later, "asserted_at='2099-01-01 00:00:00.000000', valid_from='garbage'"); asyncio.run(run("V1 a row asserted after the instant, its valid_from:", "as-of"))
con = fresh(); upd(con, later, "asserted_at='2099-01-01 00:00:00.000000', particle_type='BAD'"); asyncio.run(run("V1b a row asserted after the instant, its type:", "as-of"))
con = fresh(); upd(con, other, f"{DATED}, retired_at='garbage'"); asyncio.run(run("V2 another model's dated row, its retired_at:", "window"))
con = fresh(); upd(con, claim, "asserted_at='2099-01-01 00:00:00.000000', retired_at='garbage'"); asyncio.run(run("V3 a claim asserted after the instant, its retired_at:", "claims-as-of"))
con = fresh(); upd(con, bare, "valid_from='garbage'"); asyncio.run(run("V4 an ACTIVE row without a vector, its valid_from:", "delta", [bare]))
con = fresh(); upd(con, bare, "particle_type='BAD'"); asyncio.run(run("V4b an ACTIVE row without a vector, its type:", "delta", [bare]))
