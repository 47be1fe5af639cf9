// Reads a file that `crawl export` wrote, with readers independent of the Go code that wrote it:
// csv-parse for CSV (each row an object keyed by the header) and JSON.parse for JSON lines.
// Prints {"rows": [...]} on stdout; a file that does not parse fails with the reader's error.
'use strict';
const fs = require('fs');
const { parse } = require(require.resolve('csv-parse/sync', { paths: [process.env.CSVPARSE_DIR] }));

const [format, file] = process.argv.slice(2);
const text = fs.readFileSync(file, 'utf8');
let rows;
if (format === 'csv') {
  // Strict: every row has the header's columns, quotes are balanced.
  rows = parse(text, { columns: true, relax_quotes: false, relax_column_count: false, skip_empty_lines: false });
} else if (format === 'jsonl') {
  const lines = text.split('\n');
  if (lines.pop() !== '') {
    throw new Error('the last line does not end with a newline');
  }
  rows = lines.map((line, i) => {
    try {
      return JSON.parse(line);
    } catch (e) {
      throw new Error(`line ${i + 1}: ${e.message}`);
    }
  });
} else {
  throw new Error(`format ${format}: want csv or jsonl`);
}
process.stdout.write(JSON.stringify({ rows }));
