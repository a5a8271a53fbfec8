# Columns particles-rs did not select before stop 54: text that is not UTF-8 in them, and odd
# born_retired values, through the reference's uncached loader and its build. A copy of coins-b.db.
import asyncio, sqlite3, sys, shutil
from sqlalchemy.ext.asyncio import create_async_engine, AsyncSession
from particles.store import particle_store as ps
from particles.store import candidate_cache as cc
src, path = sys.argv[1], sys.argv[2]
NU = "CAST(X'5B302E352C20FF5D' AS TEXT)"
async def run(label):
    eng = create_async_engine(f"sqlite+aiosqlite:///{path}")
    async with AsyncSession(eng) as s:
        for name, f in [("direct", lambda: ps.get_active_particles_with_embeddings(s, 0.0)), ("build", lambda: cc._build(s, (0, b'')))]:
            try:
                await f(); print(label, name, "ok")
            except Exception as e:
                print(label, name, type(e).__name__, str(e)[:110].replace("\n", " "))
    await eng.dispose()
con = sqlite3.connect(src)
row = con.execute("SELECT id FROM particles WHERE status='ACTIVE' AND embedding_json IS NOT NULL AND embedding_model_id='all-MiniLM-L6-v2' ORDER BY rowid LIMIT 1 OFFSET 4").fetchone()[0]
for column in ["born_retired", "content_norm_hash", "domain_hint", "modality_classifier", "modality_classifier_model"]:
    shutil.copy(src, path); c = sqlite3.connect(path); c.execute(f"UPDATE particles SET {column}={NU} WHERE id=?", (row,)); c.commit()
    asyncio.run(run(f"S {column} not UTF-8:"))
for value in ["'x'", "2", "0.5", "X'00'"]:
    shutil.copy(src, path); c = sqlite3.connect(path); c.execute(f"UPDATE particles SET born_retired={value} WHERE id=?", (row,)); c.commit()
    asyncio.run(run(f"T born_retired = {value}:"))
shutil.copy(src, path); c = sqlite3.connect(path); c.execute(f"UPDATE particles SET domain_hint={NU}, particle_type='BAD' WHERE id=?", (row,)); c.commit()
asyncio.run(run("U domain_hint not UTF-8 and a bad type in the same row:"))
