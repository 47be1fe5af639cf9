// list.cjs reads files of WARC records with warcio.js and lists, for each file, the records it
// holds: their WARC-Type, WARC-Target-URI and WARC-Payload-Digest, and whether the block's
// digest is the SHA-256 of the block. Run by the warctest package's Read:
//
//   WARCIO_DIR=<folder holding node_modules/warcio> node list.cjs FILE...
//
// A file need not be a whole WARC file: the bytes at a stored offset and length, one gzip member,
// are a file of one record. It prints one JSON object: file name -> records, or an error.
"use strict";
const fs = require("fs");
const path = require("path");
const crypto = require("crypto");
const { createRequire } = require("module");

const warcio = createRequire(path.join(process.env.WARCIO_DIR || ".", "package.json"))("warcio");
const { WARCParser } = warcio;
const sha256 = (buf) => "sha256:" + crypto.createHash("sha256").update(buf).digest("hex");

(async () => {
  const out = {};
  for (const file of process.argv.slice(2)) {
    const recs = [];
    try {
      const parser = new WARCParser([fs.readFileSync(file)], { parseHttp: false });
      for await (const rec of parser) {
        const block = Buffer.from(await rec.readFully());
        recs.push({ type: rec.warcType, uri: rec.warcTargetURI || "", payloadDigest: rec.warcPayloadDigest || "",
          blockDigestOK: rec.warcBlockDigest === sha256(block) });
      }
      out[file] = { records: recs };
    } catch (e) {
      out[file] = { records: recs, error: String(e.stack || e) };
    }
  }
  console.log(JSON.stringify(out));
})();
