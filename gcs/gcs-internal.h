/*
 * gcs/gcs-internal.h - what the gcs/ source files share with each other and
 * with the unit tests (tests/gcs/): URL/name encoding, the listing-page
 * parser, the in-memory tree, header parsers, the HTTP layer, and the store
 * backend's state (struct gcs_store, its lock order) and cross-file
 * functions. Not part of the public contract (include/xprofs/gcs.h).
 *
 * Who calls whom: the files of gcs/ form a DAG. Each file below calls only
 * files on later lines, so no two files call each other, directly or
 * around a loop (check: `farm-studio look gcs` lists no circle in gcs/):
 *
 *   backend.c      the store: set-up, ops table, threads, status.json
 *   blobs.c        the shared view cache's client -> auth, http, url
 *   mutate.c       -> upload, namespace, tree, http, list, url
 *   upload.c       -> blocks (gcs_fetch_range), namespace, http, list, url
 *   blocks.c       -> stream, block-table, namespace, http, url
 *   stream.c       -> block-table, http, url
 *   namespace.c    -> tree, http, list, url
 *   auth.c         -> auth-source, auth-jwt, http, url
 *   auth-source.c  -> auth-jwt, http
 *   auth-jwt.c     -> list
 *   http.c         -> list
 *   block-table.c, tree.c, url.c, list.c: no other gcs/ file
 *
 * Where a lower file needs something from a higher one, the higher one
 * hands it down: the pool's Authorization header is a function its owner
 * passes to gcs_http_init(), and a stream fills the block table
 * (block-table.c) that readers (blocks.c) also use, never blocks.c itself.
 * Foreign errors become errno in http.c alone (gcs_http_errno() and the
 * store calls' gcs_status_errno(), gcs_data_errno()).
 */
#ifndef GCS_INTERNAL_H
#define GCS_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "xprofs/gcs.h"
#include "xprofs/store-backend.h"
#include "xprofs/util.h"

#define GCS_NAME_MAX 1024        /* GCS object names: at most 1024 bytes */
#define GCS_TOKEN_MAX 4096       /* a nextPageToken we accept */
#define GCS_PAGE_MAX (32u << 20) /* one listing page response */
#define GCS_SMALL_MAX (1u << 20) /* metadata / error / upload answers */
#define GCS_URL_MAX 16384

/* ---- url.c ------------------------------------------------------------- */

/**
 * gcs_url_parse() - split "gs://BUCKET[/PREFIX]" into a bucket and a
 * prefix without leading/trailing '/'. Caller owns both (free()). -EINVAL on
 * a malformed URL or an invalid bucket name.
 */
int gcs_url_parse(const char *url, char **bucket, char **prefix) XPROFS_WUR;

/** gcs_bucket_valid() - Google's bucket naming rules for @b (@n bytes). */
bool gcs_bucket_valid(const char *b, size_t n);
/**
 * gcs_pct_encode() - append @s (@n bytes, borrowed) to @out with every
 * byte but [A-Za-z0-9-._~] percent-encoded ('/' becomes %2F). 0 or -E2BIG/-ENOMEM.
 */
int gcs_pct_encode(struct xprofs_buf *out, const char *s, size_t n) XPROFS_WUR;

/**
 * gcs_endpoint_resolve() - the JSON API base URL without a trailing
 * '/' or "/storage/v1": @o->endpoint, else $CLOUD_STORAGE_EMULATOR_ENDPOINT,
 * else $STORAGE_EMULATOR_HOST (http:// added when it has no scheme), else
 * https://storage.googleapis.com. Caller owns (free()); NULL on ENOMEM.
 */
char *gcs_endpoint_resolve(const struct xprofs_gcs_options *o);

/* ---- list.c: listing pages -------------------------------------------- */

struct gcs_item {
	const char *name; /* borrowed from the parsed page; valid during the callback */
	size_t name_len;
	uint64_t size;
	uint64_t generation;
	int64_t mtime_ns;
};

typedef int (*gcs_item_cb)(void *arg, const struct gcs_item *it);

/**
 * gcs_list_parse() - parse one objects.list response page (@json,
 * @len bytes, borrowed, hostile). Calls @cb for every well-formed item; items
 * with a missing/oversized name, a non-numeric or out-of-range size or
 * generation are skipped and counted in *@skipped. *@next_token: caller owns
 * (free()), NULL when this is the last page. Returns 0, -EBADMSG for a page
 * that is not a JSON object / has a non-array "items", -E2BIG for an
 * oversized page or token, or the callback's non-zero value.
 */
int gcs_list_parse(const char *json, size_t len, gcs_item_cb cb, void *arg, char **next_token,
		   unsigned *skipped) XPROFS_WUR;
/** gcs_u64_parse() - a decimal string (GCS's int64-as-string) into @v. */
int gcs_u64_parse(const char *s, uint64_t max, uint64_t *v) XPROFS_WUR;
/** gcs_time_parse() - RFC 3339 "2024-01-02T03:04:05.678Z" into ns since the epoch. */
int gcs_time_parse(const char *s, int64_t *ns) XPROFS_WUR;
/**
 * gcs_content_range_parse() - "bytes A-B/T" (or "bytes * /T", which
 * gives -ERANGE with *@total set). -EINVAL when malformed or A > B or B >= T.
 */
int gcs_content_range_parse(const char *s, uint64_t *first, uint64_t *last,
			    uint64_t *total) XPROFS_WUR;
/**
 * gcs_range_parse() - a resumable upload's 308 "Range: bytes=0-N" into
 * the committed byte count N+1 (0 when @s is NULL/empty). -EINVAL if malformed.
 */
int gcs_range_parse(const char *s, uint64_t *committed) XPROFS_WUR;
/** gcs_error_message() - the "message" of a GCS error JSON body, or "". Borrows @body; writes into @out (@n bytes). */
void gcs_error_message(const char *body, size_t len, char *out, size_t n);

/**
 * gcs_object_parse() - size/generation/updated of an object resource
 * (upload answer), or with @done non-NULL of a rewrite answer (*@done false:
 * not finished, @st untouched). Borrows @json.
 */
int gcs_object_parse(const char *json, size_t len, struct xprofs_store_stat *st,
		     bool *done) XPROFS_WUR;
/** gcs_json_string() - top-level string @key of @json; caller owns *@out (free()). -ENOENT if absent. */
int gcs_json_string(const char *json, size_t len, const char *key, char **out) XPROFS_WUR;

/* ---- tree.c: the in-memory namespace ----------------------------------- */

struct gcs_tree;

/** gcs_tree_new() - an empty tree with just the root. Caller owns; free with gcs_tree_free(). */
int gcs_tree_new(struct gcs_tree **out) XPROFS_WUR;
struct gcs_tree *gcs_tree_free(struct gcs_tree *t);
/**
 * gcs_tree_add_file() - add or replace the file @path (borrowed; a
 * clean store path) with @st, creating implicit parent directories.
 * -EEXIST when @path or a parent is already the other type (directories
 * win: a file "a" and an object "a/b" make "a" a directory). -ENOMEM, -E2BIG
 * past the node limit.
 */
int gcs_tree_add_file(struct gcs_tree *t, const char *path,
		      const struct xprofs_store_stat *st) XPROFS_WUR;
/** gcs_tree_add_dir() - add directory @path and parents; @local marks it mkdir'ed here (kept across refreshes). */
int gcs_tree_add_dir(struct gcs_tree *t, const char *path, bool local) XPROFS_WUR;
/** gcs_tree_remove() - remove file @path, or empty directory @path; -ENOENT, -ENOTEMPTY. */
int gcs_tree_remove(struct gcs_tree *t, const char *path) XPROFS_WUR;
int gcs_tree_stat(struct gcs_tree *t, const char *path, struct xprofs_store_stat *st) XPROFS_WUR;
/** gcs_tree_list() - call @cb for each child of directory @dir; -ENOTDIR, -ENOENT. */
int gcs_tree_list(struct gcs_tree *t, const char *dir, xprofs_store_list_cb cb, void *arg);
/** gcs_tree_copy_local_dirs() - re-add @from's locally created directories into @to. */
int gcs_tree_copy_local_dirs(struct gcs_tree *from, struct gcs_tree *to) XPROFS_WUR;
/** gcs_tree_count() - nodes (files + directories) and an estimate of the bytes they use. */
void gcs_tree_count(const struct gcs_tree *t, uint64_t *nodes, uint64_t *bytes);

struct gcs_auth; /* auth-internal.h */

/* ---- http.c: pooled libcurl requests with retries ------------------------ */

enum gcs_kind {
	GCS_REQ_LIST,
	GCS_REQ_GET,
	GCS_REQ_UPLOAD,
	GCS_REQ_DELETE,
	GCS_REQ_OTHER,
	GCS_REQ_KINDS,
};

struct gcs_counters {
	atomic_uint_fast64_t requests[GCS_REQ_KINDS];
	atomic_uint_fast64_t retries;
	atomic_uint_fast64_t errors;
	atomic_uint_fast64_t bytes_down;
	atomic_uint_fast64_t bytes_up;
	atomic_uint_fast64_t block_hits;      /* served from memory */
	atomic_uint_fast64_t block_disk_hits; /* served from the lz4 cache */
	atomic_uint_fast64_t block_misses;    /* fetched from GCS */
	atomic_uint_fast64_t block_waits;     /* coalesced onto another reader's fetch */
	atomic_uint_fast64_t prefetched;      /* blocks fetched ahead by the prefetch thread */
	atomic_uint_fast64_t streams;         /* streaming GETs started (stream.c) */
	atomic_uint_fast64_t streams_ended; /* ... ended early: a seek, close, idle reader, skips */
	atomic_uint_fast64_t stale;
};

/*
 * gcs_counters_json() - the HTTP counters of @c (borrowed) as JSON members,
 * without braces, appended to @out: "requests":{...} by kind, for the kinds
 * in @what (GCS_CTR_KIND() bits, in enum order), "retries", "errors",
 * "stale" (with GCS_CTR_STALE), "bytes_downloaded", "bytes_uploaded". The
 * one writer of them, for status.json's store and shared-cache client.
 * 0, -E2BIG or -ENOMEM.
 */
#define GCS_CTR_KIND(kind) (1u << (kind))
#define GCS_CTR_ALL_KINDS (GCS_CTR_KIND(GCS_REQ_KINDS) - 1)
#define GCS_CTR_STALE GCS_CTR_KIND(GCS_REQ_KINDS)
int gcs_counters_json(const struct gcs_counters *c, unsigned what,
		      struct xprofs_buf *out) XPROFS_WUR;

/*
 * gcs_auth_header_fn - appends "Authorization: ..." for @auth to @out (the
 * store passes auth.c's gcs_auth_header()). 0 or -errno.
 */
typedef int (*gcs_auth_header_fn)(struct gcs_auth *auth, struct xprofs_buf *out);

/*
 * A pool of easy handles with its retry settings. Its @auth_header adds the
 * Authorization header of @auth to every request; the credentials' own pool
 * (token requests, auth.c) has none. The pool only holds the function its
 * owner gave it, so http.c stays below auth.c: auth.c calls http.c, never
 * the other way round.
 */
struct gcs_http {
	struct gcs_auth *auth;          /* borrowed; passed to auth_header */
	gcs_auth_header_fn auth_header; /* NULL: no Authorization header */
	unsigned max_handles;
	unsigned retry_initial_ms, retry_max_ms, retry_deadline_s;
	unsigned max_attempts; /* 0: retry until retry_deadline_s */
	bool fail_fast;        /* do not retry DNS failures, refused connections, timeouts */
	unsigned connect_timeout_ms, stall_timeout_s;
	unsigned timeout_ms; /* whole transfer of one attempt; 0: none */
	bool no_proxy;       /* never use a proxy (the metadata server is local to the VM) */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	void **idle;              /* CURL * handles not in use; protected by lock */
	unsigned n_idle;          /* protected by lock */
	unsigned n_created;       /* protected by lock */
	struct gcs_counters *ctr; /* borrowed */
};

struct gcs_req {
	/* in */
	int kind;               /* enum gcs_kind */
	const char *method;     /* "GET", "POST", "PUT", "DELETE" */
	const char *url;        /* borrowed */
	const char *headers[6]; /* extra "Name: value" lines, NULL-terminated; borrowed */
	bool idempotent;        /* safe to retry */
	bool send_body;         /* a body follows (possibly empty) */
	const void *body;       /* in-memory body (borrowed) ... */
	int body_fd;            /* ... or @body_len bytes of @body_fd at @body_off */
	uint64_t body_off, body_len;
	uint64_t expect_generation; /* ranged GET: -ESTALE when the answer is another version ... */
	uint64_t expect_size;       /* ... or has another total size */
	struct xprofs_buf *resp;    /* 2xx response body goes here (borrowed; bounded by its max) */
	/*
	 * ... or, with @to_fd, into @resp_fd (borrowed) from offset 0, at most
	 * @resp_max bytes (-EFBIG past it): a whole object of any size with
	 * bounded memory. Each attempt rewrites from 0; @fd_len says how many
	 * bytes the last one wrote (stale bytes beyond it are the caller's to ignore).
	 */
	bool to_fd;
	int resp_fd;
	uint64_t resp_max;
	uint8_t *dst; /* ... or a ranged GET: bytes [range_first, range_first+dst_len) land here */
	/*
	 * A retried ranged GET asks only for the bytes after the ones already
	 * reported (dst_frozen): a reset 200 MB into a stream costs no re-download.
	 */
	size_t dst_len;
	uint64_t range_first;
	/*
	 * Optional, with @dst: byte i goes to dst_blocks[i / dst_block_size] +
	 * i % dst_block_size instead (@dst is then only a non-NULL marker), and
	 * @on_progress(@progress_arg, n) is called from the transfer whenever
	 * the first n bytes have all arrived, after the answer's generation and
	 * size were checked. Bytes reported once are never written again (a
	 * retry skips them), so the caller may hand them out at once.
	 */
	uint8_t *const *dst_blocks; /* borrowed */
	size_t dst_block_size;
	void (*on_progress)(void *progress_arg, size_t n);
	void *progress_arg;
	/*
	 * Optional, instead of @dst: a streaming GET. @sink(@sink_arg, rel, p, n)
	 * takes the @n bytes at @rel (relative to range_first) of the
	 * [range_first, range_first+dst_len) range, in order and each byte
	 * once (after the answer's generation and size were checked; a retry
	 * resumes after the last byte taken). It may block (flow control);
	 * it returns 0 or -errno, which ends the request with that error and
	 * no retry.
	 */
	int (*sink)(void *sink_arg, uint64_t rel, const uint8_t *p, size_t n);
	void *sink_arg;
	/*
	 * Optional: once *@cancel is true the request ends with -ECANCELED
	 * within about a second (libcurl's progress callback, the backoff
	 * sleep) and is not retried; not counted as an error.
	 */
	const atomic_bool *cancel; /* borrowed */
	/* out */
	long status;
	size_t dst_got;    /* bytes placed into dst */
	size_t dst_frozen; /* bytes reported to on_progress (never rewritten) */
	char content_range[128];
	char range[128];          /* 308 answers */
	char location[2048];      /* resumable session URI */
	uint64_t goog_generation; /* x-goog-generation, 0 if absent */
	char errmsg[256];         /* the error message of a non-2xx answer, or why no answer came */
	unsigned sends;           /* times it went out: retries and libcurl's own resends */
	uint64_t fd_len;          /* @to_fd: body bytes the last attempt wrote */
};

/*
 * GCS_REQ_POST_EMPTY_JSON() - initialiser of a retryable POST of @kind_ whose
 * body is the empty JSON object (a rewrite, a resumable upload's start): the
 * caller adds the URL and its Content-Type header.
 */
#define GCS_REQ_POST_EMPTY_JSON(kind_)                                                             \
	{                                                                                          \
		.kind = (kind_), .method = "POST", .idempotent = true, .send_body = true,          \
		.body = "{}", .body_len = 2                                                        \
	}

/**
 * gcs_http_init() - an empty pool of at most @max_handles (0: 8) handles
 * counting into @ctr (borrowed). Every request gets @auth_header(@auth)'s
 * Authorization header (both borrowed; NULL: none). 0 or -ENOMEM; undo with
 * gcs_http_deinit().
 */
int gcs_http_init(struct gcs_http *h, struct gcs_auth *auth, gcs_auth_header_fn auth_header,
		  unsigned max_handles, struct gcs_counters *ctr) XPROFS_WUR;
void gcs_http_deinit(struct gcs_http *h);
/**
 * gcs_http_do() - run @rq (borrowed), retrying retryable failures of
 * idempotent requests under the deadline. Returns 0 when an HTTP answer came
 * (rq->status tells which; non-2xx bodies are not in rq->resp), or -errno for
 * a transport failure (gcs_http_errno()).
 */
int gcs_http_do(struct gcs_http *h, struct gcs_req *rq) XPROFS_WUR;
/** gcs_retryable() - Google's policy: 408, 429, 5xx (not 501), resets, refused connections, DNS, timeouts. */
bool gcs_retryable(long http_status, int curl_code);
/**
 * gcs_http_errno() - the one mapping of the module from an HTTP status and a
 * CURLcode (CURLE_OK: look at the status) to 0 or -errno.
 */
int gcs_http_errno(long http_status, int curl_code);
/**
 * gcs_status_errno() - what the failed answer @rq (borrowed) means for a
 * store call, from gcs_http_errno(): a 1xx/3xx not asked for is -EIO. Logs
 * an HTTP error with @what (an object name, or what was being done).
 */
int gcs_status_errno(const struct gcs_req *rq, const char *what);
/**
 * gcs_data_errno() - what a read or an upload of gs://@bucket/@obj that
 * exhausted its retries reports to the application: transport trouble
 * (timeouts, resets, refused connections, 429s, protocol errors) is -EIO,
 * logged with its cause; errors with a meaning of their own (ESTALE,
 * EACCES, ENOENT, EEXIST, ...) pass through as @r.
 */
int gcs_data_errno(int r, const char *bucket, const char *obj);
/** gcs_backoff_ms() - the delay before retry @attempt (1-based): jittered, capped. */
unsigned gcs_backoff_ms(unsigned initial_ms, unsigned max_ms, unsigned attempt, unsigned *seed);

/* ---- the store backend (backend.c, namespace.c, block-table.c, blocks.c, stream.c,
 * upload.c, mutate.c) ----
 *
 * Lock order (never take an earlier lock while holding a later one):
 *   s->list_lock -> s->tree_lock -> s->bg_lock
 *   s->w_lock -> w->lock -> s->tree_lock
 * f->lock -> s->blk_lock (stream.c: starting, cancelling, positioning a
 * file's stream); otherwise s->blk_lock and f->lock are never held together
 * with another store lock.
 * HTTP requests (and so the pool's h->lock and the credentials' lock, both
 * leaves) run with at most s->list_lock (a listing) or w->lock (an upload)
 * held, never with s->tree_lock, s->bg_lock or s->blk_lock.
 */

#define GCS_BLOCK_SIZE (1u << 20) /* the unit of reads, of the block table and of the disk cache */
#define GCS_DW_MAX 8              /* fetched blocks queued for the disk cache (pinned in memory) */
#define GCS_BLK_SLOTS 4096        /* buckets of the block table */

enum { GCS_BLK_LOADING, GCS_BLK_READY };

/* One GCS_BLOCK_SIZE block of one object generation (block-table.c). */
struct blk {
	char *obj;
	uint64_t gen, idx, hash;
	int state;
	int err;
	uint8_t *data;
	size_t len;
	unsigned refs;
	bool in_table;
	bool fetched;      /* came from GCS: goes to the disk cache once published */
	bool published;    /* made ready by the streaming GET before its fetch ended */
	bool abandoned;    /* a stream dropped it half filled: its waiters fetch it again */
	int64_t err_until; /* a failed block answers its error until then (mono ns) */
	struct blk *hnext;
	struct blk *lru_prev, *lru_next;
};

/*
 * A node of an intrusive doubly linked list whose head is a pointer to its
 * first node (NULL: empty): the store's open writers and streams. The lock
 * is the caller's; gcs_list_entry() is the struct @node is member @member of.
 */
struct gcs_list {
	struct gcs_list *prev, *next;
};

#define gcs_list_entry(node, type, member) ((type *)((char *)(node)-offsetof(type, member)))

/* gcs_list_push() - @n first in the list at *@head. */
static inline void gcs_list_push(struct gcs_list **head, struct gcs_list *n)
{
	n->prev = NULL;
	n->next = *head;
	if (*head)
		(*head)->prev = n;
	*head = n;
}

/* gcs_list_del() - @n out of the list at *@head. */
static inline void gcs_list_del(struct gcs_list **head, struct gcs_list *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else
		*head = n->next;
	if (n->next)
		n->next->prev = n->prev;
}

struct gcs_store {
	struct xprofs_store base;
	char *bucket, *prefix, *endpoint;
	char *user_project; /* -o billing_project: userProject= on every storage URL; or NULL */
	struct xprofs_gcs_options o; /* pointers in it are not kept, except cache */
	struct gcs_auth *auth;
	struct gcs_http http;
	struct gcs_counters ctr;
	const char *tmpdir;
	int64_t stream_idle_ns; /* stream.c: a reader away this long ends its stream */

	pthread_rwlock_t tree_lock;
	struct gcs_tree *tree; /* protected by tree_lock */
	int64_t tree_time;     /* mono ns when its listing began; protected by tree_lock */
	bool journaling;       /* protected by tree_lock */
	struct gcs_journal *journal, **journal_tail; /* protected by tree_lock */

	pthread_mutex_t list_lock; /* one listing at a time */
	atomic_uint_fast64_t listings, last_list_ms, skipped;

	pthread_mutex_t bg_lock;
	pthread_cond_t bg_cond;
	bool bg_want, bg_stop; /* protected by bg_lock */
	bool bg_started;
	pthread_t bg;
	pthread_cond_t pf_cond;       /* prefetch jobs queued */
	struct gcs_prefetch *pf_head; /* protected by bg_lock */
	unsigned pf_len;              /* protected by bg_lock */
	bool pf_started;
	pthread_t pf;
	pthread_cond_t dw_cond;       /* blocks queued for the disk cache */
	pthread_cond_t dw_room;       /* the queue has room again */
	struct blk *dw_q[GCS_DW_MAX]; /* ring; each holds a block reference; protected by bg_lock */
	unsigned dw_head, dw_len;     /* protected by bg_lock */
	bool dw_started;
	pthread_t dw;

	pthread_mutex_t w_lock;
	struct gcs_list *writers; /* open writers (gcs_writer.link); protected by w_lock */

	pthread_mutex_t blk_lock;
	pthread_cond_t blk_cond;
	struct blk *blk_slots[GCS_BLK_SLOTS]; /* protected by blk_lock */
	struct blk lru;                       /* sentinel; protected by blk_lock */
	uint64_t blk_mem;                     /* protected by blk_lock */
	struct gcs_list *streams; /* every file's stream (link); protected by blk_lock */
	bool streams_stop;        /* unmount: no new streams; protected by blk_lock */
	unsigned stream_waiters;  /* readers waiting for a stream to claim a block; blk_lock */
	unsigned streams_running; /* runs going: at most half the HTTP handles; blk_lock */
};

struct gcs_file {
	struct xprofs_store_reader base;
	struct gcs_store *s;
	char *obj;
	struct xprofs_store_stat st;
	pthread_mutex_t lock;
	uint64_t next_off;         /* protected by lock */
	unsigned window;           /* blocks; protected by lock */
	struct gcs_stream *stream; /* NULL until the first; protected by lock, freed at close */
};

struct gcs_writer {
	struct xprofs_store_writer base;
	struct gcs_store *s;
	char *path, *obj;
	int fd;
	pthread_mutex_t lock;
	uint64_t size;        /* protected by lock */
	uint64_t if_gen;      /* precondition of the next upload; protected by lock */
	bool excl, dirty;     /* protected by lock */
	int64_t mtime_ns;     /* protected by lock */
	struct gcs_list link; /* in s->writers; protected by s->w_lock */
};

/* ---- url.c: object names and request URLs ---- */

/** gcs_object_name() - the object name of store path @path plus @suffix; caller owns (free()); NULL if too long or ENOMEM. */
char *gcs_object_name(struct gcs_store *s, const char *path, const char *suffix);
/** gcs_url_path() - reset @out to endpoint/@api/b/BUCKET/o[/@obj] (percent-encoded). */
int gcs_url_path(struct gcs_store *s, struct xprofs_buf *out, const char *api,
		 const char *obj) XPROFS_WUR;
/** gcs_url_user_project() - add userProject= (-o billing_project) to @out, if set. */
int gcs_url_user_project(struct gcs_store *s, struct xprofs_buf *out) XPROFS_WUR;
/** gcs_url_object() - gcs_url_path() and the store's userProject parameter. */
int gcs_url_object(struct gcs_store *s, struct xprofs_buf *out, const char *api,
		   const char *obj) XPROFS_WUR;
/** gcs_url_param() - append ?@key=@val or &@key=@val (value percent-encoded). */
int gcs_url_param(struct xprofs_buf *out, const char *key, const char *val) XPROFS_WUR;
int gcs_url_param_u64(struct xprofs_buf *out, const char *key, uint64_t v) XPROFS_WUR;
/** gcs_same_origin() - whether @url has the scheme, host and port of @endpoint. */
bool gcs_same_origin(const char *endpoint, const char *url);
/** gcs_project_valid() - whether @p may be a billing project (id or number). */
bool gcs_project_valid(const char *p);

/* ---- namespace.c: the tree, listings, refresh ---- */

enum { GCS_J_ADD_FILE, GCS_J_REMOVE, GCS_J_ADD_DIR };
/** gcs_object_meta() - @obj's metadata JSON into @resp (borrowed); *@found false when absent. */
int gcs_object_meta(struct gcs_store *s, const char *obj, struct xprofs_buf *resp,
		    bool *found) XPROFS_WUR;

int gcs_ns_apply(struct gcs_store *s, int op, const char *path, const struct xprofs_store_stat *st);
int gcs_ns_stat(struct gcs_store *s, const char *path, struct xprofs_store_stat *st);
int gcs_ns_refresh(struct gcs_store *s) XPROFS_WUR;
void gcs_ns_journal_free(struct gcs_store *s);
void *gcs_ns_bg_main(void *arg);
int gcs_stat(struct xprofs_store *base, const char *path, struct xprofs_store_stat *st);
int gcs_list(struct xprofs_store *base, const char *dir, xprofs_store_list_cb cb, void *arg);
int gcs_refresh(struct xprofs_store *base);

/* ---- block-table.c: the block table, its budget and the disk cache ---- */

/*
 * Readers (blocks.c) and streams (stream.c) fill the table through these;
 * "held" means with s->blk_lock held, "no lock" without it.
 * gcs_blk_find(): held; block @idx of @obj at generation @gen, or NULL.
 * gcs_blk_claim_one(): held; a new loading block @idx (the loader's
 * reference) into *@out, -EEXIST when present, -ENOMEM.
 * gcs_blk_room(): held; evict idle blocks until @need more bytes fit, and
 * say whether they do (loading and referenced blocks cannot be evicted).
 * gcs_blk_retry_due(): held; @b failed and its error is no longer
 * remembered: it leaves the table (freed once unreferenced) and the caller
 * fetches the block anew.
 * gcs_blk_touch(): held; @b (ready) was used: last in the LRU.
 * gcs_blk_unref(): held; drop a reference taken with b->refs++.
 * gcs_blk_release(): no lock; the same, then evict to the budget; with
 * @consumed the block is evicted first (its reader has finished with it).
 * gcs_blk_disk_get(): no lock; @b->len bytes from the disk cache into @b.
 * gcs_blk_on_disk(): no lock; whether the disk cache has block @idx.
 * gcs_blk_publish(): no lock; make the loading blocks @v ready (failed ones
 * remember their error), wake their waiters, hand fetched ones to the disk
 * cache and drop the loader's references (consumes them); returns how many
 * loaded without error.
 * gcs_blk_abandon(): no lock; drop the loading block @b (and the loader's
 * reference) half filled; its waiters fetch it again.
 */
struct blk *gcs_blk_find(struct gcs_store *s, const char *obj, uint64_t gen, uint64_t idx);
int gcs_blk_claim_one(struct gcs_store *s, const char *obj, uint64_t gen, uint64_t idx,
		      struct blk **out);
bool gcs_blk_room(struct gcs_store *s, uint64_t need);
bool gcs_blk_retry_due(struct gcs_store *s, struct blk *b);
void gcs_blk_touch(struct gcs_store *s, struct blk *b);
void gcs_blk_unref(struct gcs_store *s, struct blk *b);
void gcs_blk_release(struct gcs_store *s, struct blk *b, bool consumed);
bool gcs_blk_disk_get(struct gcs_store *s, struct blk *b);
bool gcs_blk_on_disk(struct gcs_store *s, const char *obj, uint64_t gen, uint64_t idx);
size_t gcs_blk_publish(struct gcs_store *s, struct blk **v, size_t n);
void gcs_blk_abandon(struct gcs_store *s, struct blk *b);
/*
 * A stream writes its blocks to the disk cache GCS_DISK_GROUP at a time as
 * one entry (key: gcs_disk_group_key() of the group's first block, which is
 * a multiple of GCS_DISK_GROUP); gcs_blk_disk_get() looks for a block's own
 * entry, then for its group's. A group entry may end early (the stream ended).
 */
#define GCS_DISK_GROUP 16
size_t gcs_disk_group_key(char *key, size_t n, struct gcs_store *s, const char *obj, uint64_t gen,
			  uint64_t first);
/* gcs_dw_main() - the disk-cache writer thread (started by backend.c when a cache is set). */
void *gcs_dw_main(void *arg);
/* gcs_blk_table_free() - at unmount, with every thread stopped: free every block. */
void gcs_blk_table_free(struct gcs_store *s);

/* ---- blocks.c: reads ---- */

/**
 * gcs_fetch_range() - [@off, @off+@len) of @obj at generation @gen (size @size) into @dst,
 * or (block mode, @dst NULL) into the loading blocks @blocks covering it,
 * split into parallel ranged GETs when large. 0 or -errno (ESTALE first).
 */
int gcs_fetch_range(struct gcs_store *s, const char *obj, uint64_t gen, uint64_t size, uint64_t off,
		    size_t len, uint8_t *dst, struct blk **blocks);
void *gcs_pf_main(void *arg);
/* gcs_blocks_free() - at unmount, threads stopped: queued prefetch jobs and every block. */
void gcs_blocks_free(struct gcs_store *s);
int gcs_open(struct xprofs_store *base, const char *path, struct xprofs_store_reader **out);
ssize_t gcs_pread(struct xprofs_store_reader *base, void *buf, size_t n, uint64_t off);
int gcs_file_stat(struct xprofs_store_reader *base, struct xprofs_store_stat *st);
void gcs_close(struct xprofs_store_reader *base);

/* ---- stream.c: one streaming GET per sequential reader ---- */

struct gcs_stream;
/**
 * gcs_stream_start() - with @f->lock held: (create @f's stream and) start a
 * run of it at block @idx, up to block @end (exclusive; the object's block
 * count, or the next block present). -EBUSY while the last run is still ending or
 * when half the store's HTTP handles already carry streams (each holds one
 * for as long as it runs; listings, uploads and random reads need the
 * rest), -ESHUTDOWN at unmount, -ENOMEM, -EAGAIN (no thread).
 */
int gcs_stream_start(struct gcs_store *s, struct gcs_file *f, uint64_t idx, uint64_t end);
/* gcs_stream_idle_ns() - how long a stream waits for its reader (the store's setting). */
int64_t gcs_stream_idle_ns(void);
/** gcs_stream_cancel() - end the run (a seek); returns at once. NULL is fine. */
void gcs_stream_cancel(struct gcs_stream *st);
/** gcs_stream_reader_at() - the reader is at block @idx: the run may go STREAM_AHEAD past it. */
void gcs_stream_reader_at(struct gcs_stream *st, uint64_t idx);
/** gcs_stream_running() - blk_lock held: a run is going and not cancelled (@st may be NULL). */
bool gcs_stream_running(const struct gcs_stream *st);
/** gcs_stream_will_fill() - blk_lock held: the running run will claim block @idx. */
bool gcs_stream_will_fill(const struct gcs_stream *st, uint64_t idx);
/** gcs_stream_free() - cancel, join and free @st (at close; consumes it). */
void gcs_stream_free(struct gcs_stream *st);
/** gcs_streams_stop() - unmount: cancel every run and wait until they are done. */
void gcs_streams_stop(struct gcs_store *s);

/* ---- upload.c: spooled writers and uploads ---- */

int gcs_object_generation(struct gcs_store *s, const char *obj, uint64_t *gen) XPROFS_WUR;
int gcs_upload(struct gcs_store *s, struct gcs_writer *w, uint64_t size,
	       struct xprofs_store_stat *st) XPROFS_WUR;
int gcs_spool_open(struct gcs_store *s);
int gcs_prefill(struct gcs_store *s, const char *obj, const struct xprofs_store_stat *st,
		int fd) XPROFS_WUR;
int gcs_create(struct xprofs_store *base, const char *path, unsigned flags,
	       struct xprofs_store_writer **out);
ssize_t gcs_write(struct xprofs_store_writer *base, const void *buf, size_t n, uint64_t off);
ssize_t gcs_wread(struct xprofs_store_writer *base, void *buf, size_t n, uint64_t off);
int gcs_truncate(struct xprofs_store_writer *base, uint64_t size);
int gcs_flush(struct xprofs_store_writer *base);
int gcs_commit(struct xprofs_store_writer *base);
void gcs_abort(struct xprofs_store_writer *base);

/* ---- mutate.c: delete, rename, mkdir, rmdir ---- */

int gcs_unlink(struct xprofs_store *base, const char *path);
int gcs_rename(struct xprofs_store *base, const char *from, const char *to);
int gcs_mkdir(struct xprofs_store *base, const char *path);
int gcs_rmdir(struct xprofs_store *base, const char *path);

#endif
