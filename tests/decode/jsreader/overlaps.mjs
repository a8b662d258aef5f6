// tests/decode/jsreader/overlaps.mjs - read a trace.json as Chrome DevTools'
// trace engine does (@paulirish/trace_engine, the engine of the Performance
// panel, published from Chromium) and report what it drops.
//
// Usage: node overlaps.mjs TRACE.json
// Prints one JSON line: {"events": complete events, "threads": threads,
// "dropped": events the engine's tree builder leaves out, "examples": [...]}.
//
// Per thread (pid, tid) its "X" events are sorted with the engine's
// sortTraceEventsInPlace() and nested with TreeHelpers.treify(), the step
// that builds the Performance panel's per-thread trees: an event that
// starts inside the one on top of the stack and ends after it, in the
// reader's IEEE doubles (ts + dur), is left out of the tree, silently. JSON
// numbers are parsed by JSON.parse, as DevTools does.
import fs from 'node:fs';
import * as Trace from '@paulirish/trace_engine';

const path = process.argv[2];
if (!path) {
	console.error('usage: node overlaps.mjs TRACE.json');
	process.exit(2);
}
const json = JSON.parse(fs.readFileSync(path, 'utf8'));
const events = json.traceEvents ?? json;
const threads = new Map();
let n = 0;
for (const e of events) {
	if (e.ph !== 'X')
		continue;
	const k = e.pid + '/' + e.tid;
	if (!threads.has(k))
		threads.set(k, []);
	threads.get(k).push(e);
	n++;
}
let dropped = 0;
const examples = [];
for (const [k, evs] of threads) {
	Trace.Helpers.Trace.sortTraceEventsInPlace(evs);
	const {entryToNode} = Trace.Helpers.TreeHelpers.treify(evs);
	for (const e of evs) {
		if (entryToNode.has(e))
			continue;
		dropped++;
		if (examples.length < 5)
			examples.push({thread: k, name: e.name, ts: e.ts, dur: e.dur, end: e.ts + e.dur});
	}
}
console.log(JSON.stringify({events: n, threads: threads.size, dropped, examples}));
