# Faults the reference meets in its delta (a chunk fetched whole, every status), its as-of and
# window loaders and its claim loaders (each result fetched whole). Run on copies of coins-b.db.
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
                await ps.get_particles_with_embeddings_as_of(s, datetime(2100, 1, 1))
            elif kind == "window":
                await ps.get_particles_in_window_scope(s, require_embedding=True)
            elif kind == "window-claims":
                await ps.get_particles_in_window_scope(s, require_claim=True)
            elif kind == "claims-as-of":
                await ps.get_particles_with_claims_as_of(s, datetime(2100, 1, 1))
            elif kind == "claims":
                await ps.get_active_particles_with_claims(s)
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
NOT_UTF8 = "CAST(X'5B302E352C20FF5D' AS TEXT)"
con = fresh(); state = asyncio.run(build())
cacheable = q(con, "SELECT id FROM particles WHERE status='ACTIVE' AND embedding_json IS NOT NULL ORDER BY id")
retired = q(con, "SELECT id FROM particles WHERE status!='ACTIVE' AND embedding_json IS NOT NULL ORDER BY id")
a, b, c = cacheable[3], cacheable[10], retired[0]
print("a b c:", a, b, c)
con = fresh(); upd(con, c, "valid_from='garbage'"); asyncio.run(run("K a retired row's valid_from:", "delta", [c]))
con = fresh(); upd(con, c, f"embedding_json={NOT_UTF8}"); asyncio.run(run("K2 a retired row's embedding not UTF-8:", "delta", [c]))
con = fresh(); upd(con, c, "particle_type='BAD'"); asyncio.run(run("K3 a retired row's type:", "delta", [c]))
con = fresh(); upd(con, a, "embedding_json='[0.5, oops]'"); upd(con, b, f"content={NOT_UTF8}"); asyncio.run(run("L a's embedding, b's content not UTF-8:", "delta", [a, b]))
con = fresh(); upd(con, a, "particle_type='BAD'"); upd(con, b, "asserted_at='garbage'"); asyncio.run(run("M a's type, b's asserted_at:", "delta", [a, b]))
con = fresh(); upd(con, a, "particle_type='BAD'"); upd(con, b, "embedding_json='[0.5, oops]'"); asyncio.run(run("M2 a's type, b's embedding:", "delta", [b, a]))
con = fresh(); upd(con, a, "particle_type='BAD'"); upd(con, c, "asserted_at='garbage'"); asyncio.run(run("M3 a's type, retired c's asserted_at:", "delta", [a, c]))
# The loaders: early at 0.3, late at 0.6 (confidence order).
early, late = cacheable[5], cacheable[20]
con = fresh(); upd(con, early, "confidence_value=0.3, particle_type='BAD'"); upd(con, late, "confidence_value=0.6, valid_from='garbage'"); asyncio.run(run("N early type, late valid_from:", "as-of"))
con = fresh(); upd(con, early, "confidence_value=0.3, particle_type='BAD'"); upd(con, late, "confidence_value=0.6, embedding_json='[0.5, oops]'"); asyncio.run(run("N2 early type, late embedding:", "as-of"))
con = fresh(); upd(con, early, "confidence_value=0.3, valid_from='2024-01-01 00:00:00.000000', embedding_json='[0.5, oops]'"); upd(con, late, "confidence_value=0.6, valid_from='2024-01-01 00:00:00.000000', retired_at='garbage'"); asyncio.run(run("O early embedding, late retired_at (both dated):", "window"))
claims = q(con, "SELECT id FROM particles WHERE status='ACTIVE' AND structured_claim_json IS NOT NULL ORDER BY id")
ce, cl = claims[1], claims[5]
con = fresh(); upd(con, ce, "confidence_value=0.3, particle_type='BAD'"); upd(con, cl, "confidence_value=0.6, retired_at='garbage'"); asyncio.run(run("P early claim's type, late claim's retired_at:", "claims-as-of"))
con = fresh(); upd(con, ce, "confidence_value=0.3, particle_type='BAD'"); upd(con, cl, f"confidence_value=0.6, content={NOT_UTF8}"); asyncio.run(run("Q early claim's type, late claim's content not UTF-8:", "claims"))
con = fresh(); upd(con, ce, "confidence_value=0.3, valid_from='2024-01-01 00:00:00.000000', particle_type='BAD'"); upd(con, cl, "confidence_value=0.6, valid_from='2024-01-01 00:00:00.000000', modality_classified_at='garbage'"); asyncio.run(run("R early dated claim's type, late's modality_classified_at:", "window-claims"))
