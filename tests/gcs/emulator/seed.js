#!/usr/bin/env node
// tests/gcs/emulator/seed.js - upload a local directory tree to gs://BUCKET/PREFIX
// with the official Node client (@google-cloud/storage), so test data reaches
// the emulator the way a real user's data reaches GCS.
//
//   STORAGE_EMULATOR_HOST=http://127.0.0.1:PORT node seed.js SRC_DIR gs://BUCKET[/PREFIX] [--concurrency N]
// Files larger than 8 MiB go through a resumable upload, others through one
// request. Prints "seeded N objects, B bytes".
'use strict';
const fs = require('fs');
const path = require('path');
const { Storage } = require('@google-cloud/storage');

function usage() {
  console.error('usage: STORAGE_EMULATOR_HOST=URL node seed.js SRC_DIR gs://BUCKET[/PREFIX] [--concurrency N]');
  process.exit(2);
}
const argv = process.argv.slice(2);
let concurrency = 16;
const pos = [];
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--concurrency') concurrency = Number(argv[++i]);
  else pos.push(argv[i]);
}
if (pos.length !== 2 || !process.env.STORAGE_EMULATOR_HOST) usage();
const [src, url] = pos;
const m = /^gs:\/\/([^/]+)\/?(.*?)\/*$/.exec(url);
if (!m) usage();
const [, bucketName, prefix] = m;

function walk(dir, rel, out) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name), r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) walk(p, r, out);
    else if (e.isFile()) out.push([p, r]);
  }
  return out;
}

async function main() {
  const storage = new Storage({ projectId: 'xprofs-test' });
  const bucket = storage.bucket(bucketName);
  const files = walk(src, '', []);
  let next = 0, bytes = 0;
  async function worker() {
    while (next < files.length) {
      const [p, r] = files[next++];
      const size = fs.statSync(p).size;
      await bucket.upload(p, {
        destination: prefix ? `${prefix}/${r}` : r,
        resumable: size > 8 * 1024 * 1024,
        validation: false,
      });
      bytes += size;
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, concurrency) }, worker));
  console.log(`seeded ${files.length} objects, ${bytes} bytes`);
}
main().catch((e) => {
  console.error(`seed.js: ${e && e.message}`);
  process.exit(1);
});
