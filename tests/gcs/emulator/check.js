#!/usr/bin/env node
// tests/gcs/emulator/check.js - read gs://BUCKET/PREFIX back with the official
// Node client and compare it with a local directory tree: the same relative
// names and byte-identical contents. Verifies that what xprofs uploads is an
// ordinary GCS object any client can read.
//
//   STORAGE_EMULATOR_HOST=URL node check.js gs://BUCKET[/PREFIX] LOCAL_DIR [--allow-extra]
// --allow-extra: objects with no local file are not an error.
// Exit 0 when equal; otherwise prints each difference and exits 1.
'use strict';
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const { Storage } = require('@google-cloud/storage');

const argv = process.argv.slice(2);
const allowExtra = argv.includes('--allow-extra');
const pos = argv.filter((a) => !a.startsWith('--'));
if (pos.length !== 2 || !process.env.STORAGE_EMULATOR_HOST) {
  console.error('usage: STORAGE_EMULATOR_HOST=URL node check.js gs://BUCKET[/PREFIX] LOCAL_DIR [--allow-extra]');
  process.exit(2);
}
const m = /^gs:\/\/([^/]+)\/?(.*?)\/*$/.exec(pos[0]);
const [, bucketName, prefix] = m;
const local = pos[1];

function walk(dir, rel, out) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name), r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) walk(p, r, out);
    else if (e.isFile()) out.set(r, p);
  }
  return out;
}
const sha = (b) => crypto.createHash('sha256').update(b).digest('hex');

async function main() {
  const storage = new Storage({ projectId: 'xprofs-test' });
  const [objs] = await storage.bucket(bucketName).getFiles({ prefix: prefix ? `${prefix}/` : '' });
  const want = walk(local, '', new Map());
  const seen = new Set();
  let bad = 0;
  for (const o of objs) {
    const rel = prefix ? o.name.slice(prefix.length + 1) : o.name;
    seen.add(rel);
    if (!want.has(rel)) {
      if (!allowExtra) { console.log(`extra object: ${o.name}`); bad++; }
      continue;
    }
    const [data] = await o.download({ validation: false });
    if (sha(data) !== sha(fs.readFileSync(want.get(rel)))) {
      console.log(`content differs: ${o.name} (${data.length} bytes remote)`);
      bad++;
    }
  }
  for (const rel of want.keys()) {
    if (!seen.has(rel)) { console.log(`missing object: ${rel}`); bad++; }
  }
  console.log(bad ? `check: ${bad} differences` : `check: ${want.size} objects identical`);
  process.exit(bad ? 1 : 0);
}
main().catch((e) => {
  console.error(`check.js: ${e && e.message}`);
  process.exit(1);
});
