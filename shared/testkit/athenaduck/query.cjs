// Reads a crawl's records with DuckDB as the stack's Athena table declares them, and runs queries.
// argv: the columns file (infra/crawlstack/record-columns.json), the folder that holds records/ (a
// bucket's copy, or the embedded backend's blobs folder), and a JSON array of SQL queries over the
// view "records". Prints {"results": [[row, ...], ...]}, each row an object of JSON values.
//
// The view follows the table: its columns, of the Hive types the file declares, matched to the
// records' keys without regard to case (as the OpenX JSON SerDe matches them), and the partition
// keys crawl and dt read from the path records/crawl=<crawl>/dt=<dt>/, as partition projection
// reads them. A key of a record that no column names is left out, as the SerDe leaves it out.
'use strict';
const fs = require('fs');
const path = require('path');
const { createRequire } = require('module');

const duckdb = createRequire(path.join(process.env.DUCKDB_DIR, 'x.js'))('@duckdb/node-api');

// structure is the json_transform structure of a Hive type.
function structure(t) {
  t = t.trim();
  const simple = { string: 'VARCHAR', int: 'INTEGER', bigint: 'BIGINT', boolean: 'BOOLEAN', double: 'DOUBLE' };
  if (simple[t]) return simple[t];
  let m;
  if ((m = /^array<(.*)>$/.exec(t))) return [structure(m[1])];
  if ((m = /^map<string,(.*)>$/.exec(t))) return `MAP(VARCHAR, ${sqlType(m[1])})`;
  if ((m = /^struct<(.*)>$/.exec(t))) {
    const out = {};
    for (const f of m[1].split(',')) {
      const [name, type] = f.split(':');
      out[name.toLowerCase()] = structure(type);
    }
    return out;
  }
  throw new Error(`no DuckDB type for the Hive type ${t}`);
}

function sqlType(t) {
  const s = structure(t);
  if (typeof s !== 'string') throw new Error(`map values of ${t}: not a simple type`);
  return s;
}

async function main() {
  const [columnsFile, root, queriesJSON] = process.argv.slice(2);
  const table = JSON.parse(fs.readFileSync(columnsFile, 'utf8'));
  const shape = {};
  for (const c of table.columns) shape[c.name] = structure(c.type);
  const parts = table.partitionKeys.map((k) => k.name);
  if (parts.join(',') !== 'crawl,dt') throw new Error(`partition keys ${parts}: this reader knows crawl and dt`);
  const glob = path.join(root, 'records', '*', '*', '*.jsonl').replaceAll("'", "''");
  const shapeSQL = JSON.stringify(shape).replaceAll("'", "''");
  const db = await duckdb.DuckDBInstance.create(':memory:');
  const c = await db.connect();
  await c.run(`CREATE VIEW lowered AS SELECT crawl, dt,
    CAST(map_from_entries(list_transform(json_keys(json), k -> {'k': lower(k), 'v': json_extract(json, '$."' || k || '"')})) AS JSON) AS j
    FROM read_json_objects('${glob}', format = 'newline_delimited', hive_partitioning = true)`);
  await c.run(`CREATE VIEW records AS SELECT crawl, dt, unnest(json_transform(j, '${shapeSQL}')) FROM lowered`);
  const results = [];
  for (const q of JSON.parse(queriesJSON)) {
    const r = await c.runAndReadAll(q);
    results.push(r.getRowObjectsJson());
  }
  process.stdout.write(JSON.stringify({ results }));
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack || e) + '\n');
  process.exit(1);
});
