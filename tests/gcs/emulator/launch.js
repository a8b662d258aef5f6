#!/usr/bin/env node
// tests/gcs/emulator/launch.js - an offline Cloud Storage emulator for xprofs
// tests and benchmarks: firebase-tools' StorageEmulator constructed directly
// (no `firebase emulators:start`, which needs Java and downloads a rules jar),
// with the rules runtime replaced by allow-all no-ops.
//
//   node launch.js [--port N] [--host 127.0.0.1] [--quiet] [--parent-pid PID]
// prints "ready PORT" on stdout once listening (--port 0 = any free port), and
// exits cleanly on SIGTERM/SIGINT, or when process PID is gone, deleting its
// private blob directory.
//
// Patches over the stock emulator (what xprofs relies on, and what it lacks):
//  1. Errors thrown by any route handler (sync or async) become a 500 JSON
//     answer instead of killing the process; uncaught exceptions are logged.
//  2. Media downloads (alt=media, /download/...) are served by streaming just
//     the requested range from the blob file (the stock code reads the whole
//     object per request), with RFC 7233 semantics: a range that starts past
//     the end gets 416 + "Content-Range: bytes */SIZE"; `generation=G` that
//     is not the live generation gets 404, as GCS does.
//  3. Upload preconditions: `ifGenerationMatch=0` (create only) answers 412
//     when the object exists; `ifGenerationMatch=G` answers 412 unless the live
//     generation is G. Checked atomically against concurrent uploads of the
//     same name (media, multipart and resumable).
//  4. Chunked resumable uploads: PUT with "Content-Range: bytes A-B/TOTAL"
//     appends and answers 308 + "Range: bytes=0-N" until TOTAL is reached;
//     "bytes */TOTAL" queries/finalises; "bytes A-*/..." is a single-chunk
//     upload (what @google-cloud/storage sends). Bodies stream to disk, so
//     there is no size limit on resumable uploads.
//  5. The body-parser limit for one-shot uploads is raised from 130 MB to
//     2 GB.
//  6. Generations are made strictly increasing (the stock emulator uses
//     Date.now(), so two writes in one millisecond would share one).
//  7. Each instance keeps its blobs in its own temporary directory (the stock
//     emulator shares $TMPDIR/firebase/storage/blobs between instances and
//     deletes it on stop).
//  8. rewriteTo/copyTo (server-side copies) are served on the JSON API path
//     /storage/v1/b/... too (the stock route only knows /b/..., so xprofs got
//     501 and copied through the client), and honour their preconditions as
//     GCS does: `sourceGeneration=G` that is not the live source generation
//     gets 404, `ifGenerationMatch=G` on the destination gets 412 unless the
//     destination's live generation is G (0: absent); the copy gets a new,
//     strictly increasing generation (the stock route copies unconditionally
//     and keeps the source's).
// GET /_emulator/stats answers {"requests": N}; every other path is the
// emulator's.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const http = require('http');
const { AsyncLocalStorage } = require('async_hooks');

function parseArgs(argv) {
  const a = { port: 0, host: '127.0.0.1', quiet: false, parentPid: 0 };
  for (let i = 2; i < argv.length; i++) {
    if (argv[i] === '--port') a.port = Number(argv[++i]);
    else if (argv[i] === '--host') a.host = argv[++i];
    else if (argv[i] === '--quiet') a.quiet = true;
    else if (argv[i] === '--parent-pid') a.parentPid = Number(argv[++i]);
    else {
      console.error(`launch.js: unknown argument ${argv[i]}`);
      process.exit(2);
    }
  }
  return a;
}
const args = parseArgs(process.argv);

// 7. A private blob directory, set before the emulator computes it.
const privateTmp = fs.mkdtempSync(path.join(os.tmpdir(), 'xprofs-gcs-emu-'));
process.env.TMPDIR = privateTmp;
process.env.FIREBASE_CLI_EXPERIMENTS = process.env.FIREBASE_CLI_EXPERIMENTS || '';

const FT = path.dirname(require.resolve('firebase-tools/package.json'));
const storageDir = path.join(FT, 'lib/emulator/storage');
const req = (m) => require(require.resolve(m, { paths: [storageDir] }));
const express = req('express');
const bodyParser = req('body-parser');

// Quiet the firebase logger unless asked (it writes to stdout).
if (args.quiet) {
  try {
    const { EmulatorLogger } = require(path.join(FT, 'lib/emulator/emulatorLogger'));
    EmulatorLogger.prototype.log = function () {};
    EmulatorLogger.prototype.logLabeled = function () {};
  } catch (e) { /* logging stays on */ }
}

// 5. Raise the raw body limit (body-parser exposes parsers as configurable getters).
const origRaw = bodyParser.raw;
Object.defineProperty(bodyParser, 'raw', {
  configurable: true,
  enumerable: true,
  value: (opts) => origRaw(Object.assign({}, opts, { limit: '2gb' })),
});

// 1. Route handlers that throw or reject pass the error on instead of
// crashing; the outer app's error handler answers.
const Route = express.Route;
for (const m of ['get', 'post', 'put', 'delete', 'patch', 'all', 'head']) {
  const orig = Route.prototype[m];
  Route.prototype[m] = function (...handlers) {
    const wrap = (h) => {
      if (Array.isArray(h)) return h.map(wrap);
      if (typeof h !== 'function' || h.length === 4) return h;
      return function (rq, rs, next) {
        try {
          const p = h.call(this, rq, rs, next);
          if (p && typeof p.catch === 'function') p.catch(next);
        } catch (e) {
          next(e);
        }
      };
    };
    return orig.apply(this, handlers.map(wrap));
  };
}
process.on('uncaughtException', (e) => console.error(`launch.js: uncaught: ${e && e.stack}`));
process.on('unhandledRejection', (e) => console.error(`launch.js: unhandled: ${e && e.stack}`));

const { StorageEmulator } = require(path.join(storageDir, 'index.js'));
const { StorageRulesRuntime } = require(path.join(storageDir, 'rules/runtime.js'));
const serverMod = require(path.join(storageDir, 'server.js'));
const uploadMod = require(path.join(storageDir, 'upload.js'));
const { EmulatorRegistry } = require(path.join(FT, 'lib/emulator/registry.js'));

// The rules runtime would need Java and a downloaded jar: make it a no-op.
StorageRulesRuntime.prototype.start = async function () {};
StorageRulesRuntime.prototype.stop = async function () {};
const allowAllRules = {
  start: async () => ({ errors: [], warnings: [] }),
  stop: async () => {},
  getRuleset: () => undefined,
};
StorageEmulator.prototype.createRulesManager = () => allowAllRules;

class PreconditionFailed extends Error {
  constructor(msg) {
    super(msg);
    this.status = 412;
  }
}

function gcsError(res, code, message, reason) {
  res.status(code).json({ error: { code, message, errors: [{ message, domain: 'global', reason }] } });
}

let requests = 0;

// Build the outer app: our patches first, then the emulator's own app.
function wrapApp(emulator, inner) {
  const app = express();
  const als = new AsyncLocalStorage();
  const layer = emulator.adminStorageLayer;
  const persistence = emulator._persistence;
  const uploads = emulator.uploadService;
  const resumablePrecondition = new Map(); // upload id -> ifGenerationMatch
  const pendingCreates = new Set();        // bucket/object being finalised
  let lastGeneration = 0;

  app.use((rq, rs, next) => {
    requests++;
    next();
  });
  app.get('/_emulator/stats', (rq, rs) => rs.json({ requests }));

  // 3. Preconditions, checked where every upload type is finalised.
  const origStart = uploads.startResumableUpload.bind(uploads);
  uploads.startResumableUpload = (r) => {
    const u = origStart(r);
    const st = als.getStore();
    if (st && st.ifGenerationMatch !== undefined) resumablePrecondition.set(u.id, st.ifGenerationMatch);
    return u;
  };
  const origUpload = layer.uploadObject.bind(layer);
  layer.uploadObject = async (upload) => {
    const st = als.getStore();
    let want = st ? st.ifGenerationMatch : undefined;
    if (resumablePrecondition.has(upload.id)) {
      want = resumablePrecondition.get(upload.id);
      resumablePrecondition.delete(upload.id);
    }
    const key = `${upload.bucketId}/${upload.objectId}`;
    if (want !== undefined) {
      const md = layer.getMetadata(upload.bucketId, upload.objectId);
      const live = md ? String(md.generation) : '0';
      if (pendingCreates.has(key) || live !== String(want)) {
        try { persistence.deleteFile(upload.path, true); } catch (e) { /* staging file gone */ }
        throw new PreconditionFailed(`At least one of the pre-conditions you specified did not hold. (object ${key}, generation ${live}, wanted ${want})`);
      }
    }
    pendingCreates.add(key);
    try {
      const md = await origUpload(upload);
      // 6. Strictly increasing generations.
      let g = Number(md.generation);
      if (!(g > lastGeneration)) g = lastGeneration + 1;
      lastGeneration = g;
      md.generation = g;
      return md;
    } finally {
      pendingCreates.delete(key);
    }
  };
  app.post('/upload/storage/v1/b/:bucket/o', (rq, rs, next) => {
    const q = rq.query.ifGenerationMatch;
    if (q !== undefined && !/^\d+$/.test(String(q))) return gcsError(rs, 400, 'Invalid ifGenerationMatch', 'invalid');
    als.run({ ifGenerationMatch: q === undefined ? undefined : String(Number(q)) }, next);
  });

  // 4. Chunked resumable uploads, streamed to disk.
  app.put('/upload/storage/v1/b/:bucket/o', (rq, rs, next) => {
    const id = rq.query.upload_id && String(rq.query.upload_id);
    if (!id) return next();
    let up;
    try {
      up = uploads.getResumableUpload(id);
    } catch (e) {
      return gcsError(rs, 404, 'No such upload', 'notFound');
    }
    const cr = rq.header('content-range');
    let start = null, endStar = false, total = null;
    if (cr) {
      const m = /^bytes (?:(\d+)-(\d+|\*)|\*)\/(\d+|\*|undefined)$/.exec(cr.trim());
      if (!m) return gcsError(rs, 400, `Bad Content-Range ${cr}`, 'invalid');
      if (m[1] !== undefined) {
        start = Number(m[1]);
        endStar = m[2] === '*';
      }
      total = /^\d+$/.test(m[3]) ? Number(m[3]) : null;
    } else {
      endStar = true; // the whole object in one request
      start = 0;
    }
    if (up.status !== uploadMod.UploadStatus.ACTIVE) {
      rq.resume();
      return gcsError(rs, 400, 'Upload is not active', 'invalid');
    }
    if (start !== null && start > up.size) {
      rq.resume();
      return gcsError(rs, 400, `Chunk starts at ${start}, have ${up.size}`, 'invalid');
    }
    let skip = start !== null ? up.size - start : 0; // bytes the server already has
    rq.on('data', (chunk) => {
      if (skip >= chunk.length) {
        skip -= chunk.length;
        return;
      }
      const part = skip ? chunk.subarray(skip) : chunk;
      skip = 0;
      persistence.appendBytes(up.path, part);
      up.size += part.length;
    });
    rq.on('error', () => {});
    rq.on('end', () => {
      const done = endStar || (total !== null && up.size >= total);
      if (!done) {
        if (up.size > 0) rs.setHeader('Range', `bytes=0-${up.size - 1}`);
        return rs.status(308).end();
      }
      if (total !== null && up.size !== total)
        return gcsError(rs, 400, `Upload has ${up.size} bytes, Content-Range said ${total}`, 'invalid');
      let u;
      try {
        u = uploads.finalizeResumableUpload(id);
      } catch (e) {
        return gcsError(rs, 400, 'Upload already finalized', 'invalid');
      }
      layer.uploadObject(u).then((md) => {
        const { CloudStorageObjectMetadata } = require(path.join(storageDir, 'metadata.js'));
        rs.status(200).json(new CloudStorageObjectMetadata(md));
      }, next);
    });
  });

  // 2. Ranged media downloads streamed from the blob file.
  const mediaRoutes = [
    '/storage/v1/b/:bucket/o/:object',
    '/download/storage/v1/b/:bucket/o/:object',
    '/b/:bucket/o/:object',
  ];
  app.get(mediaRoutes, (rq, rs, next) => {
    const isDownload = rq.path.startsWith('/download/');
    if (!isDownload && rq.query.alt !== 'media') return next();
    const bucket = rq.params.bucket, object = rq.params.object;
    const md = layer.getMetadata(bucket, object);
    if (!md) return next(); // the emulator's own 404
    if (rq.query.generation !== undefined && String(rq.query.generation) !== String(md.generation))
      return gcsError(rs, 404, `No such object: ${bucket}/${object}#${rq.query.generation}`, 'notFound');
    if (md.contentEncoding === 'gzip') return next(); // transcoding: the emulator's path
    const size = Number(md.size);
    const file = persistence.getDiskPath(layer.path(bucket, object));
    let start = 0, end = size - 1, status = 200;
    const range = rq.header('range');
    if (range) {
      const m = /^bytes=(\d*)-(\d*)$/.exec(range.trim());
      if (m && (m[1] !== '' || m[2] !== '')) {
        if (m[1] === '') { // suffix range
          start = Math.max(0, size - Number(m[2]));
        } else {
          start = Number(m[1]);
          if (m[2] !== '') end = Math.min(Number(m[2]), size - 1);
          if (m[2] !== '' && Number(m[2]) < start) start = -1;
        }
        if (start < 0 || start >= size) {
          rs.setHeader('Content-Range', `bytes */${size}`);
          return gcsError(rs, 416, 'The requested range cannot be satisfied.', 'requestedRangeNotSatisfiable');
        }
        status = 206;
        rs.setHeader('Content-Range', `bytes ${start}-${end}/${size}`);
      }
    }
    rs.status(status);
    rs.setHeader('Accept-Ranges', 'bytes');
    rs.setHeader('Content-Type', md.contentType || 'application/octet-stream');
    rs.setHeader('Content-Length', String(size === 0 ? 0 : end - start + 1));
    rs.setHeader('ETag', md.etag);
    rs.setHeader('x-goog-generation', String(md.generation));
    rs.setHeader('x-goog-metageneration', String(md.metageneration));
    rs.setHeader('x-goog-stored-content-length', String(size));
    if (md.contentEncoding) rs.setHeader('x-goog-stored-content-encoding', md.contentEncoding);
    const { crc32cToString } = require(path.join(storageDir, 'crc.js'));
    rs.setHeader('x-goog-hash', `crc32c=${crc32cToString(md.crc32c)},md5=${md.md5Hash}`);
    if (size === 0) return rs.end();
    const s = fs.createReadStream(file, { start, end });
    s.on('error', (e) => {
      if (!rs.headersSent) gcsError(rs, 500, String(e), 'backendError');
      else rs.destroy();
    });
    s.pipe(rs);
  });

  // 8. Preconditions of server-side copies.
  const origCopy = layer.copyObject.bind(layer);
  layer.copyObject = (a) => {
    const md = origCopy(a);
    let g = Number(md.generation);
    if (!(g > lastGeneration)) g = lastGeneration + 1;
    lastGeneration = g;
    md.generation = g;
    return md;
  };
  const copyRoutes = ['/storage/v1', ''].map(
    (p) => `${p}/b/:bucket/o/:object/:method(rewriteTo|copyTo)/b/:dbucket/o/:dobject`);
  app.post(copyRoutes, (rq, rs, next) => {
    const src = layer.getMetadata(rq.params.bucket, rq.params.object);
    const sg = rq.query.sourceGeneration;
    if (src && sg !== undefined && String(sg) !== String(src.generation))
      return gcsError(rs, 404, `No such object: ${rq.params.bucket}/${rq.params.object}#${sg}`, 'notFound');
    rq.url = rq.url.replace(/^\/storage\/v1\//, '/'); // the stock route's path
    const q = rq.query.ifGenerationMatch;
    if (q === undefined) return next();
    if (!/^\d+$/.test(String(q))) return gcsError(rs, 400, 'Invalid ifGenerationMatch', 'invalid');
    const md = layer.getMetadata(rq.params.dbucket, rq.params.dobject);
    const live = md ? String(md.generation) : '0';
    if (live !== String(Number(q)))
      return gcsError(rs, 412, `At least one of the pre-conditions you specified did not hold. (object ${rq.params.dobject}, generation ${live}, wanted ${q})`, 'conditionNotMet');
    return next();
  });

  app.use(inner);
  // 1. The answer for anything a handler threw.
  // eslint-disable-next-line no-unused-vars
  app.use((err, rq, rs, next) => {
    const code = err && err.status === 412 ? 412 : 500;
    if (code === 500) console.error(`launch.js: ${rq.method} ${rq.url}: ${err && err.stack}`);
    if (rs.headersSent) return rs.destroy();
    gcsError(rs, code, String(err && err.message), code === 412 ? 'conditionNotMet' : 'backendError');
  });
  return app;
}

const origCreateApp = serverMod.createApp;
let listenPort = args.port;
serverMod.createApp = async (projectId, emulator) => {
  const inner = await origCreateApp(projectId, emulator);
  const app = wrapApp(emulator, inner);
  // StorageEmulator.start() calls app.listen(port, host): listen on ours, and
  // tell the emulator the real port once known.
  app.listen = (_port, host) => {
    const server = http.createServer(app);
    server.keepAliveTimeout = 60000;
    server.requestTimeout = 0;
    server.listen(listenPort, host, () => {
      listenPort = server.address().port;
      emulator.args.port = listenPort;
      process.stdout.write(`ready ${listenPort}\n`);
    });
    server.on('error', (e) => {
      console.error(`launch.js: cannot listen on ${host}:${listenPort}: ${e.message}`);
      process.exit(1);
    });
    return server;
  };
  return app;
};

const emulator = new StorageEmulator({
  projectId: 'xprofs-test',
  host: args.host,
  port: args.port || 1, // the real port is chosen in app.listen above
  rules: undefined,
  auto_download: false,
});
EmulatorRegistry.set('storage', emulator);

let stopping = false;
async function stop() {
  if (stopping) return;
  stopping = true;
  try {
    await emulator.stop();
  } catch (e) { /* already stopped */ }
  fs.rmSync(privateTmp, { recursive: true, force: true });
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
// A test killed outright must not leave an emulator behind.
if (args.parentPid > 0) {
  setInterval(() => {
    try {
      process.kill(args.parentPid, 0);
    } catch (e) {
      stop();
    }
  }, 1000).unref();
}

emulator.start().catch((e) => {
  console.error(`launch.js: start failed: ${e && e.stack}`);
  fs.rmSync(privateTmp, { recursive: true, force: true });
  process.exit(1);
});
