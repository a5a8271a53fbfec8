import asyncio, sqlite3, sys
from sqlalchemy.ext.asyncio import create_async_engine, AsyncSession
from particles.store import particle_store as ps
from particles.store import candidate_cache as cc
path = sys.argv[1]
con = sqlite3.connect(path)
rows = con.execute("SELECT id, rowid, confidence_value FROM particles WHERE status='ACTIVE' AND embedding_json IS NOT NULL AND embedding_model_id='all-MiniLM-L6-v2' ORDER BY rowid").fetchall()
early, late = rows[1][0], rows[-2][0]
def setrow(i, a): con.execute(f"UPDATE particles SET {a} WHERE id=?", (i,)); con.commit()
async def run(label):
    eng = create_async_engine(f"sqlite+aiosqlite:///{path}")
    async with AsyncSession(eng) as s:
        for name, f in [("direct", lambda: ps.get_active_particles_with_embeddings(s, 0.0)), ("build", lambda: cc._build(s, (0, b'')))]:
            try:
                await f()
                print(label, name, "ok")
            except Exception as e:
                print(label, name, type(e).__name__, str(e)[:160].replace("\n"," "))
    await eng.dispose()
setrow(early, "confidence_value=0.3"); setrow(late, "confidence_value=0.6")
print("early", early, rows[1][1], "late", late, rows[-2][1])
setrow(late, "particle_type='BAD_LATE'"); setrow(early, "embedding_json='[0.5, oops]'")
asyncio.run(run("A early-emb(0.3) late-type(0.6):"))
setrow(late, "confidence_value=0.1")
asyncio.run(run("B early-emb(0.3) late-type(0.1):"))
setrow(late, "confidence_value=0.6"); setrow(early, "particle_type='BAD_EARLY'")
asyncio.run(run("C early both faults(0.3), late type(0.6):"))
