# Rows whose faults the reference meets while fetching (not UTF-8; a DATETIME that does not parse)
# against faults it meets reading a row (embedding JSON; a bad enum), within a row, across rows,
# and across the build's partitions of 2,000 rows. Run on a copy of coins-b.db.
import asyncio, sqlite3, sys, shutil
from sqlalchemy.ext.asyncio import create_async_engine, AsyncSession
from particles.store import particle_store as ps
from particles.store import candidate_cache as cc
src, path = sys.argv[1], sys.argv[2]
def fresh(grow=0):
    shutil.copy(src, path)
    con = sqlite3.connect(path)
    if grow:
        cols = [r[1] for r in con.execute("PRAGMA table_info(particles)") if r[1] != "id"]
        for copy in range(grow):
            con.execute(f"INSERT INTO particles (id, {', '.join(cols)}) SELECT id || '-copy{copy}', {', '.join(cols)} FROM particles WHERE status='ACTIVE' AND id NOT LIKE '%-copy%'")
        con.commit()
    return con
async def run(label):
    eng = create_async_engine(f"sqlite+aiosqlite:///{path}")
    async with AsyncSession(eng) as s:
        for name, f in [("direct", lambda: ps.get_active_particles_with_embeddings(s, 0.0)), ("build", lambda: cc._build(s, (0, b'')))]:
            try:
                await f(); print(label, name, "ok")
            except Exception as e:
                print(label, name, type(e).__name__, str(e)[:110].replace("\n", " "))
    await eng.dispose()
def ids(con):
    return [r[0] for r in con.execute("SELECT id FROM particles WHERE status='ACTIVE' AND embedding_json IS NOT NULL AND embedding_model_id='all-MiniLM-L6-v2' ORDER BY rowid")]
def upd(con, i, a): con.execute(f"UPDATE particles SET {a} WHERE id=?", (i,)); con.commit()
con = fresh(); r = ids(con); early, late = r[1], r[-2]
upd(con, early, "confidence_value=0.3"); upd(con, late, "confidence_value=0.6")
upd(con, early, "embedding_json='[0.5, oops]', asserted_at='garbage'")
asyncio.run(run("D one row: bad JSON and asserted_at:"))
con = fresh(); upd(con, early, "confidence_value=0.3, particle_type='BAD_EARLY'"); upd(con, late, "confidence_value=0.6, asserted_at='garbage'")
asyncio.run(run("E early type (0.3), late asserted_at (0.6):"))
con = fresh(); upd(con, early, "confidence_value=0.3, particle_type='BAD_EARLY'"); upd(con, late, "confidence_value=0.6, embedding_json=CAST(X'5B302E352C20FF5D' AS TEXT)")
asyncio.run(run("F early type (0.3), late embedding not UTF-8 (0.6):"))
con = fresh(grow=40); r = ids(con); print("grown:", len(r), "ACTIVE rows with embeddings")
upd(con, r[0], "confidence_value=0.001, particle_type='BAD_FIRST'"); upd(con, r[-1], "confidence_value=0.999, asserted_at='garbage'")
asyncio.run(run("G type in the first partition (0.001), asserted_at in a later one (0.999):"))
con = fresh(); r = ids(con)
claimless = con.execute("SELECT id FROM particles WHERE status='ACTIVE' AND embedding_json IS NOT NULL AND structured_claim_json IS NULL LIMIT 1").fetchone()[0]
upd(con, claimless, "structured_claim_generated_at='garbage'")
asyncio.run(run("H a claim-less row's structured_claim_generated_at alone:"))
con = fresh(grow=40); r = ids(con)
upd(con, r[0], "confidence_value=0.001, particle_type='BAD_FIRST'"); upd(con, r[-1], "confidence_value=0.999, embedding_json=CAST(X'5B302E352C20FF5D' AS TEXT)")
asyncio.run(run("I type in the first partition (0.001), text not UTF-8 in a later one (0.999):"))
con = fresh()
other = con.execute("SELECT id FROM particles WHERE status='ACTIVE' AND embedding_json IS NOT NULL AND embedding_model_id != 'all-MiniLM-L6-v2' ORDER BY rowid LIMIT 1").fetchone()[0]
upd(con, other, "asserted_at='garbage'")
asyncio.run(run("J another model's row, asserted_at alone:"))
