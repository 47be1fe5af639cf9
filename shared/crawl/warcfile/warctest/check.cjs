// check.cjs reads WARC files and their CDXJ indexes with warcio.js, a reader independent of the Go
// code that wrote them, and checks every record. Run by the warctest package's Check:
//
//   WARCIO_DIR=<folder holding node_modules/warcio> node check.cjs FILE.warc.gz...
//
// For each file: the first record is a warcinfo record naming the file; every record's
// WARC-Block-Digest is the SHA-256 of its block, and every WARC-Payload-Digest that of the block
// after its HTTP header; each request record follows the response it names in WARC-Concurrent-To.
// The index beside the file (FILE.cdxj) is sorted, agrees with warcio's own CDXJ indexer line for
// line (digest given with its algorithm), and each line's offset and length read back exactly one
// response or revisit record of its URL and digest. A revisit record names a WARC 1.1 profile, the
// URI and date it refers to and a payload digest, and holds an HTTP header only; where the record
// it refers to is in one of the files read, its payload digest is that record's ("revisitsResolved").
// A conversion record's payload digest is its block's, it names a record in WARC-Refers-To, and
// where that record is in one of the files read, it is the response of the same URI
// ("conversionsResolved").
// It prints a JSON summary, and exits 1 with the problems.
"use strict";
const fs = require("fs");
const path = require("path");
const crypto = require("crypto");
const { createRequire } = require("module");

const warcio = createRequire(path.join(process.env.WARCIO_DIR || ".", "package.json"))("warcio");
const { WARCParser, CDXIndexer } = warcio;

const problems = [];
const fail = (file, msg) => problems.push(`${path.basename(file)}: ${msg}`);
const sha256 = (buf) => "sha256:" + crypto.createHash("sha256").update(buf).digest("hex");
const headerEnd = (buf) => Buffer.from(buf).indexOf("\r\n\r\n");
const profiles = ["http://netpreserve.org/warc/1.1/revisit/identical-payload-digest",
  "http://netpreserve.org/warc/1.1/revisit/server-not-modified"];
// Responses by URI and date, and the revisits to resolve against them once every file is read.
const responses = new Map();
const revisits = [];
// Response record ids (to their URI), and the conversion records to resolve against them.
const ids = new Map();
const conversions = [];
const at = (uri, date) => `${uri} ${new Date(date).getTime()}`;

async function records(bytes) {
  const out = [];
  const parser = new WARCParser([bytes], { parseHttp: false });
  for await (const rec of parser) {
    const block = Buffer.from(await rec.readFully());
    out.push({ rec, block, offset: parser.offset, length: parser.recordLength });
  }
  return out;
}

async function checkFile(file, sum) {
  const name = path.basename(file);
  const bytes = fs.readFileSync(file);
  const recs = await records(bytes);
  if (recs.length === 0 || recs[0].rec.warcType !== "warcinfo") {
    fail(file, "the first record is not a warcinfo record");
  } else if (recs[0].rec.warcHeaders.headers.get("WARC-Filename") !== name) {
    fail(file, `warcinfo names ${recs[0].rec.warcHeaders.headers.get("WARC-Filename")}`);
  }
  let last = null;
  for (const { rec, block } of recs) {
    const type = rec.warcType;
    sum.records++;
    sum[type] = (sum[type] || 0) + 1;
    const where = `${type} ${rec.warcTargetURI || ""}`;
    if (rec.warcBlockDigest !== sha256(block)) {
      fail(file, `${where}: WARC-Block-Digest ${rec.warcBlockDigest}, the block's is ${sha256(block)}`);
    }
    if (type === "response" || type === "request") {
      const end = headerEnd(block);
      if (end < 0) {
        fail(file, `${where}: no end of the HTTP header`);
      } else if (type === "response" && rec.warcPayloadDigest !== sha256(block.subarray(end + 4))) {
        fail(file, `${where}: WARC-Payload-Digest ${rec.warcPayloadDigest}, the payload's is ${sha256(block.subarray(end + 4))}`);
      }
    }
    if (type === "response") {
      responses.set(at(rec.warcTargetURI, rec.warcDate), rec.warcPayloadDigest);
      ids.set(rec.warcHeaders.headers.get("WARC-Record-ID"), rec.warcTargetURI);
    }
    if (type === "conversion") {
      // The block is the converted content: its payload digest is the block's, and it names the
      // response record it was made from.
      const refersTo = rec.warcHeaders.headers.get("WARC-Refers-To");
      if (rec.warcPayloadDigest !== sha256(block)) fail(file, `${where}: WARC-Payload-Digest ${rec.warcPayloadDigest}, the block's is ${sha256(block)}`);
      if (!/^<urn:uuid:[0-9a-f-]{36}>$/.test(refersTo || "")) fail(file, `${where}: WARC-Refers-To ${refersTo}`);
      conversions.push({ file, where, refersTo, uri: rec.warcTargetURI });
    }
    if (type === "revisit") {
      const h = rec.warcHeaders.headers;
      if (!profiles.includes(h.get("WARC-Profile"))) fail(file, `${where}: WARC-Profile ${h.get("WARC-Profile")} is not a WARC 1.1 revisit profile`);
      if (!h.get("WARC-Refers-To-Target-URI") || !h.get("WARC-Refers-To-Date")) fail(file, `${where}: no WARC-Refers-To-Target-URI or -Date`);
      if (!/^sha256:[0-9a-f]{64}$/.test(rec.warcPayloadDigest || "")) fail(file, `${where}: WARC-Payload-Digest ${rec.warcPayloadDigest}`);
      if (headerEnd(block) !== block.length - 4) fail(file, `${where}: the block is not an HTTP header alone`);
      revisits.push({ file, where, ref: at(h.get("WARC-Refers-To-Target-URI"), h.get("WARC-Refers-To-Date")), digest: rec.warcPayloadDigest });
    }
    if (type === "request") {
      if (!last || (last.warcType !== "response" && last.warcType !== "revisit") || rec.warcConcurrentTo.join(",") !== last.warcHeaders.headers.get("WARC-Record-ID") ||
          rec.warcTargetURI !== last.warcTargetURI) {
        fail(file, `${where}: does not follow its response`);
      }
    }
    last = rec;
  }
  await checkIndex(file, bytes, sum);
}

async function checkIndex(file, bytes, sum) {
  const name = path.basename(file);
  let text;
  try {
    text = fs.readFileSync(file + ".cdxj", "utf8");
  } catch (e) {
    fail(file, `no index: ${e.message}`);
    return;
  }
  const lines = text.split("\n").filter((l) => l !== "");
  const sorted = [...lines].sort((a, b) => (Buffer.compare(Buffer.from(a), Buffer.from(b))));
  if (lines.join("\n") !== sorted.join("\n")) fail(file, "the index is not sorted");
  const ours = lines.map((l) => {
    const [key, ts] = l.split(" ", 2);
    return { key, ts, ...JSON.parse(l.slice(key.length + ts.length + 2)) };
  });
  const theirs = [];
  const indexer = new CDXIndexer({ format: "cdxj" });
  for await (const cdx of indexer.iterIndex([{ filename: name, reader: [bytes] }])) theirs.push(cdx);
  const id = (c) => `${c.offset}`;
  const byOffset = new Map(theirs.map((c) => [id(c), c]));
  if (theirs.length !== ours.length) fail(file, `the index has ${ours.length} lines, warcio's indexer ${theirs.length}`);
  for (const o of ours) {
    sum.indexLines++;
    const t = byOffset.get(o.offset);
    if (!t) {
      fail(file, `index line at offset ${o.offset} (${o.url}): warcio's indexer has no record there`);
      continue;
    }
    const want = { key: t.urlkey, ts: t.timestamp, url: t.url, mime: t.mime, status: t.status == null ? "" : String(t.status),
      digest: "sha256:" + t.digest, length: String(t.length), offset: String(t.offset), filename: name };
    for (const [k, v] of Object.entries(want)) {
      if (o[k] !== v) fail(file, `index line of ${o.url}: ${k} is ${JSON.stringify(o[k])}, warcio's indexer says ${JSON.stringify(v)}`);
    }
    // The line resolves: its offset and length hold exactly the record of its URL.
    const off = Number(o.offset), len = Number(o.length);
    const got = await records(bytes.subarray(off, off + len));
    if (got.length !== 1 || !["response", "revisit", "conversion"].includes(got[0].rec.warcType) || got[0].rec.warcTargetURI !== o.url ||
        got[0].rec.warcPayloadDigest !== o.digest) {
      fail(file, `index line of ${o.url} does not read back its response, revisit or conversion record`);
    } else {
      sum.resolved++;
    }
  }
}

(async () => {
  const sum = { files: 0, records: 0, indexLines: 0, resolved: 0, revisitsResolved: 0, conversionsResolved: 0 };
  for (const file of process.argv.slice(2)) {
    sum.files++;
    try {
      await checkFile(file, sum);
    } catch (e) {
      fail(file, `unreadable: ${e.stack || e}`);
    }
  }
  for (const r of revisits) {
    const digest = responses.get(r.ref);
    if (digest === undefined) continue; // the record it refers to is in a file not read here
    if (digest !== r.digest) fail(r.file, `${r.where}: payload digest ${r.digest}, the record it refers to has ${digest}`);
    else sum.revisitsResolved++;
  }
  for (const c of conversions) {
    const uri = ids.get(c.refersTo);
    if (uri === undefined) continue; // the response it refers to is in a file not read here
    if (uri !== c.uri) fail(c.file, `${c.where}: refers to the response of ${uri}`);
    else sum.conversionsResolved++;
  }
  console.log(JSON.stringify({ summary: sum, problems }));
  process.exit(problems.length ? 1 : 0);
})();
