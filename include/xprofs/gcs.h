/*
 * xprofs/gcs.h - Google Cloud Storage as an xprofs store, on libcurl and the
 * JSON API. No FUSE here: tools can reuse the client.
 *
 * The store lists the whole bucket prefix once at mount (one flat, paginated,
 * fields-projected listing) and answers stat/list from memory, refreshing the
 * tree every list_ttl_s or on xprofs_store_refresh(). Reads are ranged GETs
 * pinned to the generation seen in the listing (ESTALE if it changed), with
 * read-ahead for sequential readers, parallel ranges for large first reads,
 * coalescing of identical concurrent requests, and blocks kept in the shared
 * lz4 cache. Writes spool to a local temporary file and upload on commit
 * (media upload, resumable above a threshold); XPROFS_STORE_EXCL uploads use
 * ifGenerationMatch=0. Retries follow Google's policy (408/429/5xx, resets,
 * timeouts; jittered exponential backoff under a deadline).
 *
 * Credentials follow Application Default Credentials order (docs/gcs-auth.md).
 * Tokens are never logged.
 */
#ifndef XPROFS_GCS_H
#define XPROFS_GCS_H

#include <stdbool.h>
#include <stdint.h>

#include "xprofs/cache.h"
#include "xprofs/store.h"
#include "xprofs/util.h"

struct xprofs_gcs_options {
	/*
	 * Base URL of the JSON API, e.g. "http://127.0.0.1:9023". NULL: taken
	 * from CLOUD_STORAGE_EMULATOR_ENDPOINT, else STORAGE_EMULATOR_HOST
	 * (scheme optional, http assumed), else https://storage.googleapis.com.
	 * With an emulator endpoint from the environment, no credentials are used.
	 */
	const char *endpoint;
	bool anonymous;             /* no Authorization header at all */
	const char *credentials;    /* a credentials JSON file; NULL: ADC order */
	unsigned list_ttl_s;        /* tree refresh interval; 0 = default (30 s) */
	unsigned connections;       /* parallel connections; 0 = default (8) */
	unsigned retry_deadline_s;  /* total retry budget per request; 0 = default (60 s) */
	bool read_only;             /* refuse writes with -EROFS */
	struct xprofs_cache *cache; /* optional block cache; borrowed, must outlive the store */
	/* tuning knobs (gcs work); 0 / false = the default in parentheses */
	unsigned retry_initial_ms;    /* first backoff step, doubled per retry (100 ms) */
	unsigned stall_timeout_s;     /* abort a transfer slower than 1 B/s for this long (30 s) */
	uint64_t resumable_threshold; /* uploads above this many bytes are resumable (8 MiB) */
	uint64_t upload_chunk;        /* resumable chunk size, rounded down to 256 KiB (8 MiB) */
	uint64_t block_mem_max;       /* RAM for cached read blocks (64 MiB) */
	bool mkdir_placeholders; /* mkdir also writes a "dir/" object, so it survives remounts */
	/* requester pays: the project billed for every storage request (userProject=); NULL: none */
	const char *billing_project;
};

/**
 * xprofs_gcs_store_new() - a store over "gs://BUCKET[/PREFIX]" @url.
 * Validates credentials and bucket access with one listing before returning,
 * so a wrong bucket or credential fails here with a clear log message and
 * -ENOENT / -EACCES / -EHOSTUNREACH / -EIO, not later at first read.
 * @url, @o: borrowed. @out: written on success; caller owns, free with
 * xprofs_store_free().
 */
int xprofs_gcs_store_new(const char *url, const struct xprofs_gcs_options *o,
			 struct xprofs_store **out) XPROFS_WUR;

/*
 * A bucket prefix as a store of whole, never-replaced objects addressed by
 * name (gcs/blobs.c): the mount's shared view cache. No listing and no tree:
 * one GET per read, one media upload with ifGenerationMatch=0 per write.
 */
struct xprofs_gcs_blobs;

/**
 * xprofs_gcs_blobs_new() - a client for "gs://BUCKET[/PREFIX]" @url with the
 * endpoint and credentials of @o (both borrowed; @o may be NULL). Checks
 * with one listing request (at most 10 s of retries) that the bucket exists
 * and can be read: -ENOENT, -EACCES, -ECONNREFUSED, ... otherwise.
 * Caller owns *@out; free with xprofs_gcs_blobs_free().
 */
int xprofs_gcs_blobs_new(const char *url, const struct xprofs_gcs_options *o,
			 struct xprofs_gcs_blobs **out) XPROFS_WUR;
/** xprofs_gcs_blobs_free() - accepts NULL; returns NULL. No request may be running. */
struct xprofs_gcs_blobs *xprofs_gcs_blobs_free(struct xprofs_gcs_blobs *b);
/**
 * xprofs_gcs_blobs_get() - object PREFIX/@name into @fd (borrowed) from
 * offset 0, its length into *@len (bytes past it in @fd are stale) and its
 * generation into *@gen (0: the server did not say). One GET, retried under
 * the deadline. 0, -ENOENT (absent), -EFBIG (over @max bytes), -EACCES, -EIO, ...
 */
int xprofs_gcs_blobs_get(struct xprofs_gcs_blobs *b, const char *name, int fd, uint64_t max,
			 uint64_t *len, uint64_t *gen) XPROFS_WUR;
/**
 * xprofs_gcs_blobs_put() - store @len bytes of @fd (borrowed, from offset 0)
 * as PREFIX/@name if its generation is @if_gen now (0: only if it does not
 * exist; else it replaces exactly that version). 0; -EEXIST when the
 * precondition failed (or a lost answer's first attempt stored it);
 * -EACCES without write access; ...
 */
int xprofs_gcs_blobs_put(struct xprofs_gcs_blobs *b, const char *name, int fd, uint64_t len,
			 uint64_t if_gen) XPROFS_WUR;
/** xprofs_gcs_blobs_status_json() - the client's request counters as one JSON object into @out. */
int xprofs_gcs_blobs_status_json(struct xprofs_gcs_blobs *b, struct xprofs_buf *out) XPROFS_WUR;

#endif
