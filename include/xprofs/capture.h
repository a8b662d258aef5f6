/*
 * xprofs/capture.h - on-demand profile capture from a workload's profiler
 * server (gRPC service tensorflow.ProfilerService, spoken over libcurl
 * HTTP/2 prior knowledge with protobuf-c messages; no gRPC library).
 *
 * The mount's control files feed lines to xprofs_capture_submit(); parsing is
 * synchronous (a malformed line is rejected at once with -EINVAL and a
 * reason), the capture itself runs on background threads, one per host,
 * started together (shared start timestamp). Each host's XSpace is streamed
 * into the store at <run>/plugins/profile/<session>/<host>.xplane.pb with
 * XPROFS_STORE_EXCL, so nothing is ever overwritten. Every RPC has a deadline
 * derived from the duration. Line grammar: see xprofs_capture_help().
 *
 * No FUSE here. Thread-safe.
 */
#ifndef XPROFS_CAPTURE_H
#define XPROFS_CAPTURE_H

#include <stddef.h>
#include <sys/types.h>

#include "xprofs/store.h"
#include "xprofs/util.h"

struct xprofs_capture;

/*
 * Called (from a capture thread) after a session's files were written, with
 * the store path of the run ("" for the logdir root) and the session name,
 * so the front end can drop its caches. Both strings are borrowed. Not
 * called when no host stored a file (errors, empty traces). Called without
 * capture locks held, but it must not call xprofs_capture_free().
 */
typedef void (*xprofs_capture_notify_fn)(void *arg, const char *run, const char *session);

/**
 * xprofs_capture_new() - a capture manager writing into @store (borrowed; must
 * outlive the manager). @out: caller owns, free with xprofs_capture_free().
 */
int xprofs_capture_new(struct xprofs_store *store, xprofs_capture_notify_fn notify, void *arg,
		       struct xprofs_capture **out) XPROFS_WUR;
/**
 * xprofs_capture_free() - stops running captures (Terminate, then cancel after
 * a short grace period), joins every thread. Accepts NULL; returns NULL.
 */
struct xprofs_capture *xprofs_capture_free(struct xprofs_capture *c);

/**
 * xprofs_capture_submit() - act on one control line.
 * @run: the store path of the run whose control file was written (borrowed),
 *       or NULL for the mount's top-level control file (the line then may
 *       name a run with "run=NAME").
 * @line, @len: borrowed; may end in "\n"; several lines may be given at once.
 * @reason: optional; receives why a line was rejected.
 * Return: 0 when accepted (the capture runs in the background), -EINVAL for a
 * malformed line (nothing of a multi-line write is started then), -EBUSY when
 * a capture of that run is already running and the line is not "stop",
 * -ESRCH for "stop" with nothing running, -EAGAIN when too many host captures
 * are in flight, -ESHUTDOWN while xprofs_capture_free() runs, -ENOMEM.
 * Every failure is also kept as the last rejected line of the control file.
 */
int xprofs_capture_submit(struct xprofs_capture *c, const char *run, const char *line, size_t len,
			  struct xprofs_buf *reason) XPROFS_WUR;

/*
 * One open control file: bytes written are assembled into lines (until
 * '\n' or close) and each line is acted on by xprofs_capture_submit() in
 * order. Not thread-safe per input (the front end serializes one open file's
 * writes); any number of inputs may be used at once.
 */
struct xprofs_capture_input;
/** xprofs_capture_input_new() - for the control file of @run (borrowed; NULL: top-level). */
int xprofs_capture_input_new(const char *run, struct xprofs_capture_input **out) XPROFS_WUR;
/** xprofs_capture_input_free() - drops an unterminated line; accepts NULL. */
void xprofs_capture_input_free(struct xprofs_capture_input *in);
/**
 * xprofs_capture_input_write() - @n bytes written (borrowed). Returns the
 * bytes consumed: @n, or fewer when a line after the first whole one of
 * this write was refused (the write ends before it; a retry of the rest
 * gets its error); or the -errno of xprofs_capture_submit() for the first
 * line (also -EINVAL for a line over the limit), reason in @reason.
 */
ssize_t xprofs_capture_input_write(struct xprofs_capture *c, struct xprofs_capture_input *in,
				   const char *p, size_t n, struct xprofs_buf *reason) XPROFS_WUR;
/**
 * xprofs_capture_input_close() - act on an unterminated last line, if any
 * (at close()); 0 or its -errno.
 */
int xprofs_capture_input_close(struct xprofs_capture *c, struct xprofs_capture_input *in,
			       struct xprofs_buf *reason) XPROFS_WUR;

/**
 * xprofs_capture_status() - the control file's content for @run (NULL: all
 * runs): help text until the first capture, then one JSON object per line per
 * recent capture (state, hosts, session, bytes, error), newest last, plus the
 * last rejected line's reason. Appends to @out.
 */
/**
 * xprofs_capture_status_json() - the same as data, for status.json: one JSON
 * object {"captures":[...], "rejections":{"capture":[...], "<run>":[...]}}
 * (captures oldest first; rejections per control file: the top-level one
 * and each run's that has any). No help text. Appends to @out.
 */
int xprofs_capture_status_json(struct xprofs_capture *c, struct xprofs_buf *out) XPROFS_WUR;
int xprofs_capture_status(struct xprofs_capture *c, const char *run,
			  struct xprofs_buf *out) XPROFS_WUR;

/**
 * xprofs_capture_run_valid() - whether @s (@len bytes, borrowed) is a run
 * name the capture grammar accepts ('/'-separated plain names; no "." or
 * "..", '\\' or control characters). Exported so "mkdir runs/NAME" applies
 * the same rule.
 */
bool xprofs_capture_run_valid(const char *s, size_t len);

/** xprofs_capture_help() - the grammar as text (static storage). */
const char *xprofs_capture_help(void);

#endif
