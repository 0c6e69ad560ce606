// Drives a LanceDB Node client the way memory-lancedb-pro's store and CLI use it, so the
// Python tests can check what the plugin's users would see. Written for these tests from
// the plugin's documented behaviour (src/store.ts, cli.ts at v1.1.0-beta.10); no plugin code.
//
//   node plugin_client.mjs <client: lancedb-0262 | lancedb-current> <db dir> <request.json>
//
// request: {"steps": [{"op": ...}, ...]}; prints {"results": [...]} (one entry per step).
// Any error or Rust panic exits non-zero with the message on stderr.
import { readFileSync } from "node:fs";
import { isMemoryActiveAt, parseLifecycle } from "./plugin_lifecycle.mjs";

const [client, dbPath, requestFile] = process.argv.slice(2);
const lancedb = await import(client);
const request = JSON.parse(readFileSync(requestFile, "utf-8"));
const TABLE = "memories";
const CATEGORIES = ["preference", "fact", "decision", "entity", "other"];
const db = await lancedb.connect(dbPath);

const entry = (row) => ({
  id: row.id, text: row.text, category: row.category, scope: row.scope ?? "global",
  importance: Number(row.importance), timestamp: Number(row.timestamp), metadata: row.metadata || "{}",
});
const scopeWhere = (scope) => `(scope = '${scope.replace(/'/g, "''")}') OR scope IS NULL`;

async function start(dim) {
  // The plugin's init: open (or create with a throw-away schema row), then make sure an FTS
  // index exists: it creates one (default tokenizer) only when listIndices shows none.
  let table;
  try {
    table = await db.openTable(TABLE);
  } catch {
    table = await db.createTable(TABLE, [{
      id: "__schema__", text: "", vector: Array(dim).fill(0), category: "other", scope: "global",
      importance: 0, timestamp: 0, metadata: "{}",
    }]);
    await table.delete('id = "__schema__"');
  }
  const indices = await table.listIndices();
  const hasFts = indices.some((i) => i.indexType === "FTS" || i.columns?.includes("text"));
  if (!hasFts) await table.createIndex("text", { config: lancedb.Index.fts() });
  return { created_fts: !hasFts, version: await table.version() };
}

async function list(table, scope, category, limit) {
  // store.list(): where on scope/category, every row, sorted newest first (a stable sort).
  const conds = [];
  if (scope) conds.push(`(${scopeWhere(scope)})`);
  if (category) conds.push(`category = '${category}'`);
  let q = table.query();
  if (conds.length) q = q.where(conds.join(" AND "));
  const rows = await q.select(["id", "text", "category", "scope", "importance", "timestamp", "metadata"]).toArray();
  return rows.map(entry).sort((a, b) => (b.timestamp || 0) - (a.timestamp || 0)).slice(0, limit);
}

const results = [];
for (const step of request.steps) {
  if (step.op === "start") { results.push(await start(step.dim)); continue; }
  const table = await db.openTable(TABLE);
  switch (step.op) {
    case "version":
      results.push(await table.version());
      break;
    case "indices":
      results.push((await table.listIndices()).map((i) => ({ name: i.name, type: i.indexType, columns: i.columns })));
      break;
    case "count":
      results.push(await table.countRows());
      break;
    case "list":
      results.push(await list(table, step.scope, step.category, step.limit ?? 1000));
      break;
    case "vector": {
      let q = table.vectorSearch(step.vector).distanceType("cosine").limit(step.limit ?? 5);
      if (step.scope) q = q.where(scopeWhere(step.scope));
      results.push((await q.toArray()).map((r) => r.id));
      break;
    }
    case "fts": {
      let q = table.search(step.query, "fts").limit(step.limit ?? 5);
      if (step.scope) q = q.where(scopeWhere(step.scope));
      results.push((await q.toArray()).map((r) => r.id));
      break;
    }
    case "add":
      // store.store()/importEntry(): the row as the plugin builds it (float timestamp).
      await table.add(step.rows.map((r) => ({ ...r, timestamp: Number(r.timestamp), importance: Number(r.importance) })));
      results.push(await table.version());
      break;
    case "export": {
      // cli.ts `memory-pro export`: list(scope, category, 1000), JSON.stringify(…, null, 2).
      const memories = await list(table, step.scope, step.category, 1000);
      const doc = {
        version: "1.0", exportedAt: step.exportedAt ?? new Date().toISOString(), count: memories.length,
        filters: { scope: step.scope, category: step.category },
        memories: memories.map((m) => ({ ...m, vector: undefined })),
      };
      results.push(JSON.stringify(doc, null, 2));
      break;
    }
    case "import": {
      // cli.ts `memory-pro import FILE [--scope S]`: every entry goes to S (or the default
      // scope, "global"); an entry whose id already exists is skipped. Vectors come with the step.
      const doc = JSON.parse(step.document);
      let imported = 0, skipped = 0;
      for (const m of doc.memories) {
        if (!m.text || typeof m.text !== "string" || m.text.length < 2) { skipped++; continue; }
        const id = typeof m.id === "string" && m.id.length > 0 ? m.id : crypto.randomUUID();
        if ((await table.countRows(`id = '${id.replace(/'/g, "''")}'`)) > 0) { skipped++; continue; }
        const ts = Number(m.timestamp);
        await table.add([{
          id, text: m.text, vector: step.vectors[m.text], category: CATEGORIES.includes(m.category) ? m.category : "other",
          scope: step.scope || "global", importance: Number.isFinite(Number(m.importance)) ? Math.max(0, Math.min(1, Number(m.importance))) : 0.7,
          timestamp: Number.isFinite(ts) ? ts : Date.now(),
          metadata: typeof m.metadata === "string" ? m.metadata : m.metadata != null ? JSON.stringify(m.metadata) : "{}",
        }]);
        imported++;
      }
      results.push({ imported, skipped });
      break;
    }
    case "active": {
      // retriever.filterActiveResults: isMemoryActiveAt(parseSmartMetadata(metadata, entry)) per row.
      const rows = await table.query().select(["id", "timestamp", "metadata"]).toArray();
      results.push(Object.fromEntries(rows.map((r) => {
        const meta = parseLifecycle(r.metadata, { timestamp: Number(r.timestamp) });
        return [r.id, { active: isMemoryActiveAt(meta, step.at ?? Date.now()), state: meta.state, ...meta }];
      })));
      break;
    }
    case "supersede": {
      // smart-extractor.handleSupersede on two stored rows: the old row's metadata patched with
      // fact_key, invalidated_at, superseded_by and a relation, written back as store.update
      // does (delete, then add the row again).
      const now = step.at ?? Date.now();
      const [old] = await table.query().where(`id = '${step.old}'`).toArray();
      const meta = JSON.parse(old.metadata || "{}");
      const patched = {
        ...meta, fact_key: meta.fact_key ?? `preferences:${step.old}`, invalidated_at: now, superseded_by: step.by,
        relations: [...(Array.isArray(meta.relations) ? meta.relations : []), { type: "superseded_by", targetId: step.by }],
      };
      await table.delete(`id = '${step.old}'`);
      await table.add([{ ...entry(old), vector: Array.from(old.vector), metadata: JSON.stringify(patched) }]);
      results.push(await table.version());
      break;
    }
    default:
      throw new Error(`unknown op ${step.op}`);
  }
}
console.log(JSON.stringify({ results }));
