/*
 * fs/fs-internal.h - what the files of the fs module share. One section per
 * file, lowest first; the files call each other in one direction only, so
 * no two files call each other (directly or in a loop):
 *   ops.c -> attr.c, dirs.c, logdir.c; attr.c -> status.c, views.c;
 *   views.c -> session.c -> profiles.c -> memo.c; dirs.c -> profiles.c;
 *   views.c -> handles.c -> live.c -> shared.c; context.c (the mount
 *   context) -> index.c, under all of them
 * (docs/fs.md "Files" has the exact graph). Only ops.c and daemon.c/options.c
 * include FUSE headers; FUSE_USE_VERSION is set once, in fs/meson.build.
 *
 * - the fixed names of the mount and the options struct (options.c);
 * - the runs index and mount-path classification (index.c, FUSE-free,
 *   unit-tested over a fake store);
 * - the mount context: store, cache, capture, index snapshot, counters
 *   (context.c);
 * - the shared view cache in a bucket: fetch before a render, upload after
 *   (shared.c, FUSE-free);
 * - renders in progress: single-flight, render threads, readers of a view
 *   while it renders (live.c, FUSE-free);
 * - the open-file handle (handles.c);
 * - remembered sizes and error notes (memo.c), opened profiles, kept
 *   indexes and track lists (profiles.c), session-wide renders (session.c),
 *   opening generated files (views.c): FUSE-free, unit-tested;
 * - logdir/ writers and uploads (logdir.c), status.json and the other small
 *   files (status.c), directory listings (dirs.c), attributes (attr.c), the
 *   operation table (ops.c).
 */
#ifndef XPROFS_FS_INTERNAL_H
#define XPROFS_FS_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "xprofs/cache.h"
#include "xprofs/capture.h"
#include "xprofs/decode.h"
#include "xprofs/store.h"
#include "xprofs/util.h"

/* ---- fixed names of the mount (defined once; view names: xprofs_decode_view_name()) ---- */

#define FS_NAME_LOGDIR "logdir"
#define FS_NAME_RUNS "runs"
#define FS_NAME_STATUS "status.json"
#define FS_NAME_CAPTURE "capture"
#define FS_NAME_ERRORS "errors"
#define FS_NAME_PLANES "planes"
#define FS_NAME_STEPS "steps"   /* host/steps/<n>/: slices by step (docs/trace.md "Slices") */
#define FS_NAME_WINDOW "window" /* host/window/<from>-<to>/: slices by time */
#define FS_NAME_LOD "lod" /* host/lod/, <slice>/lod/: the level-of-detail trace (docs/trace.md) */
#define FS_NAME_SESSION_SUMMARY "summary.json" /* in a session directory */
#define FS_NAME_SESSION_OPS "ops.json"         /* in a session directory: hosts combined */
#define FS_NAME_COMPARE "compare"              /* session/compare/<other>/: docs/fs.md "Compare" */
#define FS_COMPARE_LISTED 64                   /* other sessions compare/ lists (all resolve) */
#define FS_NAME_ROOT_RUN "_root"               /* how the logdir-root run is shown under runs/ */
#define FS_PLUGINS_DIR "plugins"               /* <run>/plugins/profile/<session>/ */
#define FS_PROFILE_DIR "profile"
#define FS_HOST_SUFFIX ".xplane.pb"
#define FS_SIDECAR_SUFFIX ".hlo_proto.pb"
#define FS_SIDECARS_MAX 4096 /* sidecars of one session the views get */

#define FS_IO_SIZE (256 << 10) /* st_blksize of files: one cache block per FUSE read */
#define FS_INDEX_MAX_DEPTH 32
#define FS_INDEX_MAX_ENTRIES 1000000 /* listed entries per rebuild */

/* ---- options (options.c) ---------------------------------------------- */

/* The one options struct every -o option lands in. */
struct fs_options {
	char *source;     /* owned */
	char *mountpoint; /* owned */
	int ro;
	int no_cache;
	int exact_sizes; /* stat of a view not rendered yet renders it (archivers) */
	int anonymous;
	int foreground;
	int debug;
	int single;  /* -s: single-threaded loop */
	int refresh; /* seconds; -1 = backend default */
	unsigned connections;
	unsigned retry_deadline, stall_timeout; /* gs:// seconds; 0 = the gcs defaults */
	char *cache_dir;                        /* owned */
	char *cache_max;                        /* owned, e.g. "2G" */
	uint64_t cache_max_bytes;
	int cache_accel;           /* lz4 acceleration of cache entries; 0 = the cache's default */
	char *stream_min;          /* owned; whole traces of profiles this big stream, uncached */
	uint64_t stream_min_bytes; /* parsed; 0 = never */
	char *tmp_dir;             /* owned; temporary renders (default $TMPDIR, else /tmp) */
	char *cache_min_free;      /* owned; free space kept on the cache's disk ("" = default) */
	uint64_t cache_min_free_bytes; /* XPROFS_CACHE_MIN_FREE_DEFAULT unless given */
	char *loglevel;                /* owned */
	char *endpoint;                /* owned */
	char *credentials;             /* owned */
	char *billing_project;         /* owned; gs:// requester pays (userProject=) */
	char *shared_cache;            /* owned; gs://BUCKET[/PREFIX] of shared views, or NULL */
	int show_help;
	int show_version;
	/* permissions of a source without modes (gs://): uid=, gid=, umask= */
	char *uid_s, *gid_s, *umask_s; /* owned; parsed by fs_options_check() */
	uid_t uid;                     /* owner shown (default: the mounting user) */
	gid_t gid;
	mode_t umask;          /* files 0666 & ~umask, dirs 0777 & ~umask (default 022) */
	char *follow_symlinks; /* owned; "inside" (default) or "outside" */
	bool follow_outside;   /* follow_symlinks=outside */
};

struct fuse_args;
/**
 * fs_options_parse() - set the defaults into @o, then parse @args into it;
 * what libfuse must see stays in @args. Caller frees @o with
 * fs_options_free() whatever the result. 0, or -EINVAL (bad option, reported).
 */
int fs_options_parse(struct fuse_args *args, struct fs_options *o);
/** fs_options_check() - cross-option checks and derived defaults; prints the problem. */
int fs_options_check(struct fs_options *o);
/** fs_options_usage() - the --help text. */
const char *fs_options_usage(void);
void fs_options_free(struct fs_options *o);

/* ---- runs index (index.c) --------------------------------------------- */

struct fs_host {
	char *name; /* file name minus ".xplane.pb"; owned */
	struct xprofs_store_stat st;
};

struct fs_session {
	char *name;            /* owned */
	struct fs_host *hosts; /* sorted by name; owned */
	size_t nhosts;
	/*
	 * The session's "*.hlo_proto.pb" files (XLA programs that the host views
	 * read, hlo.h): name = the whole file name; sorted; owned. At most
	 * FS_SIDECARS_MAX.
	 */
	struct fs_host *sidecars;
	size_t nsidecars;
	int64_t mtime_ns;
	uint32_t mode, uid, gid; /* the session directory's (mode 0: the backend has none) */
};

struct fs_run_node {
	char *name;  /* this component; owned */
	char *path;  /* store path of the run ("" = logdir root); owned; NULL unless is_run */
	bool is_run; /* <path>/plugins/profile exists */
	struct fs_run_node **children; /* nested runs / intermediate dirs, sorted; owned */
	size_t nchildren;
	struct fs_session *sessions; /* sorted by name; owned */
	size_t nsessions;
	uint32_t mode, uid, gid; /* is_run: <path>/plugins/profile's (mode 0: none known) */
};

/* An immutable snapshot of every run/session/host; shared by reference. */
struct fs_index {
	struct fs_run_node top; /* the runs/ directory itself */
	int refs;               /* atomic */
	int64_t built_mono_ns;
	uint64_t runs, sessions, hosts;
};

/**
 * fs_index_build() - walk @store (borrowed) and build the runs index.
 * Caller owns *@out (refs = 1); release with fs_index_put(). A listing error
 * below the root is logged and skipped; only an unreadable root fails.
 */
int fs_index_build(struct xprofs_store *store, struct fs_index **out);
struct fs_index *fs_index_get(struct fs_index *idx);
void fs_index_put(struct fs_index *idx);

/** fs_node_child() - the child run node @name of @n, or NULL. */
const struct fs_run_node *fs_node_child(const struct fs_run_node *n, const char *name);

/** fs_store_path() - the store path "<run>/plugins/profile[/<session>[/<host>.xplane.pb]]". */
int fs_store_path(char *buf, size_t size, const char *run, const char *session, const char *host);

enum fs_kind {
	FS_K_NONE = 0,
	FS_K_ROOT,    /* / */
	FS_K_STATUS,  /* /status.json */
	FS_K_CAPTURE, /* /capture or /runs/<run>/capture (run set) */
	FS_K_LOGDIR,  /* /logdir[/...]: store_path */
	FS_K_RUNS,    /* /runs or an inner run node (node set) */
	FS_K_SESSION, /* session dir */
	FS_K_SESSION_SUMMARY,
	FS_K_HOST,         /* host dir */
	FS_K_VIEW,         /* host/<view>.json (view set) */
	FS_K_ERRORS,       /* host/errors */
	FS_K_PLANES,       /* host/planes */
	FS_K_PLANE,        /* host/planes/<plane> */
	FS_K_TRACK,        /* host/planes/<plane>/<line> */
	FS_K_STEPS,        /* host/steps */
	FS_K_SLICE,        /* host/steps/<n> or host/window/<from>-<to> (slice set) */
	FS_K_WINDOWS,      /* host/window (lists nothing; any valid name resolves) */
	FS_K_LOD,          /* host/lod or <slice>/lod (lod set; slice set below a slice) */
	FS_K_SESSION_OPS,  /* session/ops.json */
	FS_K_COMPARE,      /* session/compare (lists the run's other sessions) */
	FS_K_COMPARE_RUN,  /* session/compare/<run path>... (lists nothing) */
	FS_K_COMPARE_DIR,  /* session/compare/<other> (other, other_node set) */
	FS_K_COMPARE_VIEW, /* session/compare/<other>/{ops,steps,op_profile}.json (view set) */
	FS_K_SESSION_VIEW, /* session/{hlo_stats,roofline,op_profile,framework_op_stats}.json:
			    * hosts combined (view set) */
};

/*
 * fs_kind_session_file() - a file rendered from a whole session (or two):
 * summary.json, ops.json, op_profile.json, framework_op_stats.json of a
 * session, compare/<other>/<view>; these borrow the index while they render
 * and have no host.
 */
static inline bool fs_kind_session_file(enum fs_kind k)
{
	return k == FS_K_SESSION_SUMMARY || k == FS_K_SESSION_OPS || k == FS_K_COMPARE_VIEW ||
	       k == FS_K_SESSION_VIEW;
}

/* The views a session directory offers beside summary.json and ops.json (fs/index.c). */
extern const enum xprofs_view fs_session_views[];
extern const size_t fs_session_nviews;

/* What a view in a slice directory keeps (FS_K_SLICE, and FS_K_VIEW below one). */
enum fs_slice { FS_SLICE_NONE = 0, FS_SLICE_STEP, FS_SLICE_WINDOW };

/* The views a slice directory offers, in readdir order (fs/index.c); one entry per view. */
extern const enum xprofs_view fs_slice_views[];
extern const size_t fs_slice_nviews;

/* Where a mount path points. Pointers borrow the index and the path. */
struct fs_target {
	enum fs_kind kind;
	const char *store_path;         /* FS_K_LOGDIR: into the path ("" = root) */
	const struct fs_run_node *node; /* FS_K_RUNS, _CAPTURE (NULL: root capture), below */
	const struct fs_session *session;
	const struct fs_host *host;
	const struct fs_run_node *other_node; /* FS_K_COMPARE_DIR/_VIEW: the base's run */
	const struct fs_session *other;       /* FS_K_COMPARE_DIR/_VIEW: the base session */
	int view;                             /* enum xprofs_view */
	enum fs_slice slice;                  /* FS_K_SLICE, and FS_K_VIEW inside one */
	uint32_t step;                        /* FS_SLICE_STEP: index into steps.json's steps[] */
	xprofs_ps128 from_ps, to_ps;          /* FS_SLICE_WINDOW: [from, to) in trace.json's base */
	bool lod; /* FS_K_LOD, and FS_K_VIEW inside one: the level-of-detail trace */
	char plane[XPROFS_NAME_MAX + 1];
	char line[XPROFS_NAME_MAX + 1];
	/* -ENOENT because a slice name (steps/<n>, window/<w>) did not parse: it, in the path */
	const char *bad;
	size_t bad_len;
};

/**
 * fs_path_classify() - resolve mount path @path ("/..."; borrowed, must
 * outlive @t) against @idx (borrowed; may be NULL when only the static part
 * is needed). Syntax only below planes/: whether a plane/line exists needs
 * the track list. 0, or -ENOENT / -ENAMETOOLONG / -EINVAL.
 */
int fs_path_classify(const struct fs_index *idx, const char *path, struct fs_target *t);

/**
 * fs_bad_name_why() - after fs_path_classify() refused @t's slice name
 * (t->bad set), why, and the syntax it wants, into @buf (@n bytes).
 */
void fs_bad_name_why(const struct fs_target *t, char *buf, size_t n);

/** fs_is_profile_name() - true when @name ends in ".xplane.pb" (the no-overwrite rule). */
bool fs_is_profile_name(const char *name);

/** fs_host_path() - the store path of @t's host profile (@t is at or below a host). */
int fs_host_path(const struct fs_target *t, char *buf, size_t size);

/* ---- the mount context (context.c) ------------------------------------- */

#define FS_SIZES 1024          /* remembered sizes of rendered files (hash slots) */
#define FS_ERRHOSTS 256        /* hosts whose decode errors are remembered */
#define FS_ERRMAX 8192         /* bytes of error text per host */
#define FS_ERRENTS 64          /* entries (failing files) per host */
#define FS_FACTS 256           /* profile versions whose facts are remembered (hash slots) */
#define FS_BADNAMES 64         /* bad names logged recently (hash slots; context.c) */
#define FS_TRACKS 32           /* track lists kept in memory (LRU) */
#define FS_KEPT 4              /* opened profile indexes kept between renders (views.c) */
#define FS_INFLIGHT 64         /* concurrent distinct renders */
#define FS_MEM_MAX (16u << 20) /* status.json / capture / errors snapshots */

struct fs_track_list {
	uint64_t key;  /* hash of path + size + mtime + generation; 0 = free slot */
	uint64_t used; /* LRU tick */
	size_t n;
	char **planes; /* owned */
	char **lines;  /* owned */
};

/* One line of a host's errors file: why @what failed, last at @when_ns. */
struct fs_error_ent {
	char *what; /* the file, relative to the host dir ("steps/3/trace.json"); owned */
	char *msg;  /* the reason, one line; owned */
	int64_t when_ns;
};

struct fs_errors {
	char *path;                           /* host store path; owned */
	uint64_t ver;                         /* the profile version the entries are about */
	struct fs_error_ent ents[FS_ERRENTS]; /* in order of first failure; @n used */
	size_t n;
	size_t bytes; /* of what and msg, all entries: at most FS_ERRMAX */
};

/*
 * What is known about one profile version without a render (memo.c): filled
 * when the profile is indexed (gpu) or its steps counted, read at lookup.
 */
struct fs_facts {
	uint64_t key; /* fs_version_key(.., "facts"); 0 = free slot */
	int gpu;      /* -1: not known; 0: no "/device:GPU:" plane; 1: one at least */
	bool steps_known;
	size_t steps; /* steps.json's length, when @steps_known */
};

/*
 * The tables of the rendered-view machinery (views.c); set up by
 * fs_views_init(). Lock order: see docs/fs.md ("Files").
 */
struct fs_views {
	pthread_mutex_t lock; /* protects everything below */
	pthread_cond_t cond;  /* signalled when a render ends */
	uint64_t sizes_key[FS_SIZES];
	uint64_t sizes_val[FS_SIZES];
	struct fs_errors errors[FS_ERRHOSTS];
	size_t errors_next;
	struct fs_facts facts[FS_FACTS];
	struct fs_track_list tracks[FS_TRACKS];
	struct fs_kept *kept[FS_KEPT]; /* owned; idle opened indexes (views.c), NULL: free slot */
	uint64_t tick;
	uint64_t inflight[FS_INFLIGHT]; /* single-flight keys of renders (flight.c) */
	/* threads blocked in fs_render_begin() now, and the times one woke: what
	 * tests wait on instead of sleeping (flight.c) */
	unsigned render_waiting;
	uint64_t render_wakeups;
	struct fs_live *live[FS_INFLIGHT]; /* renders in progress (live.c); borrowed */
	unsigned live_threads;             /* render threads not finished */
	int stopping;                      /* atomic: unmounting, renders cancel */
	uint64_t delay_ms_per_mb;          /* test-only render throttle (live.c) */
	uint64_t start_delay_ms;           /* test-only: each render thread starts this late */
	uint64_t end_delay_ms; /* test-only: a render leaves its slot this long after its end */
};

struct fs_counters {
	uint64_t lookups, readdirs, opens, bytes_read, bytes_written;
	uint64_t renders, render_errors, render_waits, view_hits, index_builds;
	uint64_t streamed, stream_restarts, stream_dropped; /* live.c's streamed renders */
	uint64_t profile_indexes,
		index_reuses; /* profiles indexed; kept indexes reused (views.c) */
	int64_t open_dirs;    /* a gauge: opendir() minus releasedir() (ops.c) */
};

#define FS_CNT(ctx, f) __atomic_add_fetch(&(ctx)->c.f, 1, __ATOMIC_RELAXED)
#define FS_CNT_ADD(ctx, f, n) __atomic_add_fetch(&(ctx)->c.f, (n), __ATOMIC_RELAXED)
#define FS_CNT_GET(ctx, f) __atomic_load_n(&(ctx)->c.f, __ATOMIC_RELAXED)

struct fs_ctx {
	struct fs_options *o;           /* borrowed */
	struct xprofs_store *store;     /* owned */
	struct xprofs_cache *cache;     /* owned; NULL: no cache (render to temp files) */
	struct xprofs_capture *capture; /* owned; NULL when unavailable */
	struct fs_shared *shared;       /* owned (shared.c); NULL: no shared view cache */
	const char *tmp_dir;            /* where unlinked render files go (xprofs_tmpdir()) */
	int64_t start_mono_ns;
	int64_t refresh_ns;
	uid_t uid;
	gid_t gid;

	pthread_mutex_t index_lock;
	pthread_cond_t index_cond; /* signalled when a rebuild ends */
	struct fs_index *index;    /* protected by index_lock */
	bool index_building;       /* protected by index_lock */
	int index_dirty;           /* atomic */

	uint64_t refused[FS_BADNAMES]; /* atomic: hashes of fs_refused()'s recent messages */

	struct fs_views views; /* views.c; own lock */
	struct fs_counters c;  /* atomic */
};

/**
 * fs_ctx_init() - set up @ctx for @o (borrowed) over @store (consumed) and
 * @cache (consumed, may be NULL); also starts the capture service unless
 * read-only. @ctx->views is set up separately, by fs_views_init().
 */
int fs_ctx_init(struct fs_ctx *ctx, struct fs_options *o, struct xprofs_store *store,
		struct xprofs_cache *cache);
void fs_ctx_deinit(struct fs_ctx *ctx);
/**
 * fs_refused() - log why a name was refused (printf @fmt), at notice level:
 * once per message while it stays among the FS_BADNAMES last ones, so
 * repeated lookups of one bad name do not flood the log.
 */
void fs_refused(struct fs_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** fs_invalidate_index() - the next runs/ access rebuilds the index. */
void fs_invalidate_index(struct fs_ctx *ctx);
/**
 * fs_classify() - resolve mount path @path (borrowed). Takes an index
 * reference in *@idx only when the path is under runs/ (else NULL); the
 * caller puts it with fs_index_put() after its last use of @t, also on failure.
 */
int fs_classify(struct fs_ctx *ctx, const char *path, struct fs_index **idx, struct fs_target *t);
/** fs_index_snapshot() - the current index, no rebuild (caller puts; may be NULL). */
struct fs_index *fs_index_snapshot(struct fs_ctx *ctx);
/** fs_store_is_local() - the store writes in place (no uploads; statvfs of the source). */
bool fs_store_is_local(const struct fs_ctx *ctx);

/* ---- the shared view cache (shared.c; no FUSE) --------------------------- */

struct fs_shared;
/**
 * fs_shared_start() - open -o shared_cache (checked with one listing) and
 * start its uploader into @ctx->shared; 0 without the option. -errno
 * (reported) when the bucket cannot be used: the mount fails.
 */
int fs_shared_start(struct fs_ctx *ctx);
/** fs_shared_stop() - stop the uploader (queued uploads are dropped) and free; idempotent. */
void fs_shared_stop(struct fs_ctx *ctx);
/** fs_shared_wanted() - whether generated file @t goes through the shared cache. */
bool fs_shared_wanted(const struct fs_ctx *ctx, const struct fs_target *t);
/**
 * fs_shared_fetch() - fetch the shared copy of the view with cache key @key
 * (borrowed) and import it into the local cache. 0: the local cache has it
 * now; -ENOENT: absent; -ESTALE/-EBADMSG: a foreign/damaged copy (rejected;
 * a damaged one's generation into *@damaged_gen, else 0); -EAGAIN: fetching
 * paused after a fault; another -errno. Any failure means "render it".
 */
int fs_shared_fetch(struct fs_ctx *ctx, const struct xprofs_buf *key, uint64_t *damaged_gen);
/**
 * fs_shared_offer() - queue the upload of the local entry of @key (copied);
 * @replace_gen: the generation of a damaged copy there to replace (from
 * fs_shared_fetch()), else 0. Never blocks on I/O.
 */
void fs_shared_offer(struct fs_ctx *ctx, const struct xprofs_buf *key, uint64_t replace_gen);
/** fs_shared_status_json() - status.json's "shared_cache" value (null without one) into @out. */
int fs_shared_status_json(struct fs_ctx *ctx, struct xprofs_buf *out);

/* ---- renders in progress (live.c; no FUSE) ------------------------------ */

#define FS_LIVE_OPEN_MS 400            /* an open waits this long for a render to end... */
#define FS_LIVE_OPEN_BYTES (16u << 20) /* ...or for this much of it to be readable */
#define FS_LIVE_PUBLISH (64u << 10)    /* readers are woken every this many bytes */
#define FS_RING_SIZE (8u << 20)        /* a streamed render's bytes kept for its readers */
#define FS_RING_STALL_MS 5000          /* a full ring nobody reads: go on into the cache */
#define FS_RING_WAKE (1u << 20)        /* readers waiting on a streamed render: woken per MiB */
#define FS_RING_LEND (256u << 10)      /* what a streamed render's writer builds in place at once */

struct fs_live;
struct fs_fh; /* handles.c, below: a finished or running render is attached to one */

/* What a render thread renders: callbacks on that thread, @arg owned by the job. */
struct fs_live_job {
	/* render into @out; the reason of a failure into @err */
	int (*render)(void *arg, const struct xprofs_sink *out, struct xprofs_buf *err);
	/* the render ended with @r (size @size; reason in @err), before readers see the end */
	void (*done)(void *arg, int r, uint64_t size, const struct xprofs_buf *err);
	void (*free)(void *arg);
	void *arg;
	bool shared; /* a view of the shared cache: fetched before, offered after a render */
	bool stream; /* streamed to its readers as it renders, not cached (live.c) */
};

/**
 * fs_render_begin() - claim the render of @key (never 0). true: the caller
 * renders and must call fs_render_end(); false: another thread was rendering
 * it, and has finished now (this call waited for it).
 */
bool fs_render_begin(struct fs_ctx *ctx, uint64_t key);
void fs_render_end(struct fs_ctx *ctx, uint64_t key);
/**
 * fs_live_start() - the render of cache key @key (borrowed; @hash its hash)
 * in progress, started now on a thread of its own unless it runs already.
 * Consumes @job (freed at once when the render already runs). @label: the
 * mount path for status.json (borrowed). 0 with a reference in *@out (hand it
 * to fs_live_attach()); -EAGAIN when another thread rendered it meanwhile
 * (look in the cache again); -ENOMEM.
 */
int fs_live_start(struct fs_ctx *ctx, const struct xprofs_buf *key, uint64_t hash,
		  const char *label, const struct fs_live_job *job, struct fs_live **out);
/**
 * fs_live_wait() - wait until @L ends, @max_bytes are readable, or @max_ms
 * passed (< 0: no limit). 1: done; 0: still running; the render's -errno.
 */
int fs_live_wait(struct fs_live *L, int64_t max_ms, uint64_t max_bytes);
/**
 * fs_live_attach() - consume the reference @L into @fh: a render still
 * running makes @fh FS_FH_LIVE (0); a finished one makes it a plain
 * FS_FH_CACHE or FS_FH_FD with its size (1); a failed one gives its -errno.
 */
int fs_live_attach(struct fs_live *L, struct fs_fh *fh);
/** fs_live_pread() - read @L, waiting for bytes not rendered yet; 0 only at the end; -EIO. */
ssize_t fs_live_pread(struct fs_live *L, void *buf, size_t n, uint64_t off);
/** fs_live_size() - true with the size once @L is done; false (size 0) while it renders. */
bool fs_live_size(struct fs_live *L, uint64_t *size);
/** fs_live_close() - drop a live handle's reference; accepts NULL. */
void fs_live_close(struct fs_live *L);
/** fs_live_status_json() - the renders in progress as a JSON array, into @out. */
int fs_live_status_json(struct fs_ctx *ctx, struct xprofs_buf *out);
/** fs_live_stop_all() - cancel the renders in progress and wait for their threads. */
void fs_live_stop_all(struct fs_views *v);

/* ---- open-file handles (handles.c; no FUSE) ----------------------------- */

enum fs_fh_kind {
	FS_FH_READER = 1,
	FS_FH_WRITER,
	FS_FH_FD,
	FS_FH_CACHE,
	FS_FH_MEM,
	FS_FH_CAPTURE,
	FS_FH_LIVE,
};

/* An open file. Writers are serialised by @lock (backends need not be). */
struct fs_fh {
	enum fs_fh_kind kind;
	pthread_mutex_t lock;
	struct xprofs_store_reader *rf; /* FS_FH_READER; owned */
	struct xprofs_store_writer *w;  /* FS_FH_WRITER; owned */
	uint64_t wsize;                 /* FS_FH_WRITER: size as written so far */
	bool profile;                   /* FS_FH_WRITER of a new *.xplane.pb */
	bool dirty;      /* FS_FH_WRITER: changed since the last flush; under @lock */
	bool published;  /* FS_FH_WRITER: a local new profile linked in by a flush */
	int publish_err; /* FS_FH_WRITER: why that publish failed (-errno), else 0 */
	char *spath;     /* FS_FH_WRITER: store path; owned */
	int fd;          /* FS_FH_FD: unlinked rendered file; owned */
	struct xprofs_cache_reader *ce; /* FS_FH_CACHE: a cache hit; owned */
	struct fs_live *live;           /* FS_FH_LIVE: a render in progress; a reference */
	uint64_t size;                  /* FS_FH_FD, FS_FH_CACHE, FS_FH_MEM */
	char *mem;                      /* FS_FH_MEM, FS_FH_CAPTURE (read snapshot); owned */
	char *run;                      /* FS_FH_CAPTURE: run store path; NULL = top level; owned */
	mode_t mode;                    /* FS_FH_WRITER: the mode a new file was created with */
	struct xprofs_capture_input *cin; /* FS_FH_CAPTURE opened for writing: lines; owned */
	struct fs_fh *open_prev,
		*open_next; /* the unreleased handles (handles.c); under its lock */
};

/** fs_fh_new() - an empty handle; caller owns, free with fs_fh_free(). NULL: no memory. */
struct fs_fh *fs_fh_new(enum fs_fh_kind kind);
/**
 * fs_fh_free() - closes what @fh holds (aborts an uncommitted writer, drops
 * a render in progress: fs_live_close()); accepts NULL.
 */
void fs_fh_free(struct fs_fh *fh);
/**
 * fs_fh_free_unreleased() - at teardown, after the FUSE loop: free the handles
 * FUSE never released. A close just before an unmount can leave its RELEASE
 * unread when the kernel ends the connection, and the handle would leak.
 */
void fs_fh_free_unreleased(void);
/** fs_fh_count() - how many file handles are open (not freed yet). */
uint64_t fs_fh_count(void);

/* ---- remembered sizes and error notes (memo.c; no FUSE) ------------------ */

/** fs_version_key() - a hash (never 0) of store file @path at version @st, for use @what. */
uint64_t fs_version_key(const char *path, const struct xprofs_store_stat *st, const char *what);
/** fs_size_lookup() - the remembered size for @key into *@size; false when none. */
bool fs_size_lookup(struct fs_ctx *ctx, uint64_t key, uint64_t *size);
/** fs_size_store() - remember @size for @key (replaces whatever shared its slot). */
void fs_size_store(struct fs_ctx *ctx, uint64_t key, uint64_t size);
/**
 * fs_error_note() - @what (a file of host @hpath, named relative to the
 * host dir) failed because of @msg: its entry in the host's errors file says
 * so now, with the time; logged when the entry is new or its reason changed
 * (a file failing again the same way is not logged again). @st: the profile
 * version it is about (borrowed; NULL: none): the entries of an older
 * version are dropped. All strings borrowed.
 */
void fs_error_note(struct fs_ctx *ctx, const char *hpath, const struct xprofs_store_stat *st,
		   const char *what, const char *msg);
/**
 * fs_error_clear() - @what of host @hpath at version @st (NULL: none) was
 * made now: its entry, if any, leaves the errors file (logged). Borrows all.
 */
void fs_error_clear(struct fs_ctx *ctx, const char *hpath, const struct xprofs_store_stat *st,
		    const char *what);
/**
 * fs_errors_snapshot() - append the errors file of host @hpath at version
 * @st to @out: one line per failing file, "<UTC time> <what>: <reason>".
 */
int fs_errors_snapshot(struct fs_ctx *ctx, const char *hpath, const struct xprofs_store_stat *st,
		       struct xprofs_buf *out);
/**
 * fs_facts_get() - what is known about profile @hpath at version @st (both
 * borrowed) into *@f; a version nothing is known about gives gpu -1 and no
 * steps.
 */
void fs_facts_get(struct fs_ctx *ctx, const char *hpath, const struct xprofs_store_stat *st,
		  struct fs_facts *f);
/** fs_facts_set_gpu() - remember whether @hpath at @st has a GPU plane (@gpu 0 or 1). */
void fs_facts_set_gpu(struct fs_ctx *ctx, const char *hpath, const struct xprofs_store_stat *st,
		      int gpu);
/** fs_facts_set_steps() - remember that @hpath at @st has @n steps. */
void fs_facts_set_steps(struct fs_ctx *ctx, const char *hpath, const struct xprofs_store_stat *st,
			size_t n);
/** fs_memo_free() - at unmount: free the error notes of @v. */
void fs_memo_free(struct fs_views *v);

/* ---- opened profiles (profiles.c; no FUSE) ------------------------------ */

/*
 * An opened profile: the store file and its index. The reader is on the
 * heap: the index borrows it, and a struct fs_prof moves (into a render job,
 * into and out of the kept indexes) after indexing.
 */
struct fs_prof {
	struct xprofs_store_reader *f; /* owned */
	struct xprofs_reader *r;       /* owned */
	struct xprofs_xspace *x;       /* owned; NULL until indexed */
	struct xprofs_store_stat st;   /* the open file's version */
};

/**
 * fs_prof_open() - open store file @hpath (borrowed) into @p; with @decode
 * also index it (reason appended to @err). Caller owns @p's members on
 * success; release with fs_prof_close().
 */
int fs_prof_open(struct fs_ctx *ctx, const char *hpath, bool decode, struct fs_prof *p,
		 struct xprofs_buf *err);
/**
 * fs_prof_index() - index open profile @p (store path @hpath, borrowed) into
 * @p->x (reason appended to @err); what the index tells lookups (a GPU plane
 * or none) goes into the facts of memo.c.
 */
int fs_prof_index(struct fs_ctx *ctx, const char *hpath, struct fs_prof *p, struct xprofs_buf *err);
/* The sidecars of a session, opened for a render (fs_sidecars_open()). */
struct fs_sidecars {
	struct xprofs_store_reader **f;   /* owned; NULL entries: did not open */
	struct xprofs_reader *r;          /* owned */
	struct xprofs_xspace_sidecar *sc; /* owned: what the profiles borrow */
	size_t n;                         /* entries of sc */
};
/**
 * fs_sidecars_open() - open the sidecar files of session @sess of run @node
 * (both borrowed) and attach them to @x (when not NULL) for a render; one
 * that does not open is left out. Close with fs_sidecars_close() after the
 * render (it detaches them from @x). 0 or -ENOMEM.
 */
int fs_sidecars_open(struct fs_ctx *ctx, const struct fs_run_node *node,
		     const struct fs_session *sess, struct xprofs_xspace *x,
		     struct fs_sidecars *out);
/** fs_sidecars_close() - detach from @x (may be NULL) and close; @s may be zeroed. */
void fs_sidecars_close(struct fs_sidecars *s, struct xprofs_xspace *x);

/** fs_prof_close() - close what @p holds; @p may be empty (zeroed). */
void fs_prof_close(struct fs_prof *p);
/**
 * fs_prof_take() - the kept index of @hpath at version @st into @p (which the
 * caller then owns, as from fs_prof_open(.., true, ..)); false when none.
 */
bool fs_prof_take(struct fs_ctx *ctx, const char *hpath, const struct xprofs_store_stat *st,
		  struct fs_prof *p);
/** fs_prof_keep() - keep @p (consumed) for the next use of @hpath; closes it if it has no index. */
void fs_prof_keep(struct fs_ctx *ctx, const char *hpath, struct fs_prof *p);
/**
 * fs_tracks_get() - the track list of @t's host (at its indexed version),
 * decoded once per version. On success returns with ctx->views.lock HELD and
 * *@out valid until the caller unlocks it.
 */
int fs_tracks_get(struct fs_ctx *ctx, const struct fs_target *t, struct fs_track_list **out);
/**
 * fs_steps_count() - how many steps @t's host has (steps.json's length):
 * remembered per profile version, else counted on its index (built, or a
 * kept one). For readdir of steps/ and lookups below it. 0 or -errno.
 */
int fs_steps_count(struct fs_ctx *ctx, const struct fs_target *t, size_t *n);
/**
 * fs_step_check() - whether step slice @t (steps/<n>, or a view in it) names
 * a step the profile has: 0 (also for any other target), -ENOENT past the
 * last step, or fs_steps_count()'s -errno.
 */
int fs_step_check(struct fs_ctx *ctx, const struct fs_target *t);
/**
 * fs_host_lacks_gpu() - true when @t's host profile, at the version of the
 * index, is known to have no GPU plane (learnt by an earlier index of it):
 * then it has no kernels.json. Never indexes: false when not known.
 */
bool fs_host_lacks_gpu(struct fs_ctx *ctx, const struct fs_target *t);
/** fs_profiles_free() - at unmount: close the kept indexes and free the track lists of @v. */
void fs_profiles_free(struct fs_views *v);

/* ---- session-wide files (session.c; no FUSE) ----------------------------- */

/**
 * fs_session_render() - session-wide file @t (summary.json, ops.json,
 * compare/<other>/<view>; borrowed, with the index it points into) into
 * @out; opens, indexes and closes every host of the session(s). The reason
 * of a failure into @err.
 */
int fs_session_render(struct fs_ctx *ctx, const struct fs_target *t, const struct xprofs_sink *out,
		      struct xprofs_buf *err);
/** fs_session_file_name() - what session-wide file @t is called in errors and logs. */
const char *fs_session_file_name(const struct fs_target *t);

/* ---- opening generated files (views.c; no FUSE) ------------------------- */

/** fs_views_init() - empty tables; pair with fs_views_deinit(). */
void fs_views_init(struct fs_views *v);
void fs_views_deinit(struct fs_views *v);

/** fs_view_size() - the size generated file @t will have, if known; else 0. */
uint64_t fs_view_size(struct fs_ctx *ctx, const struct fs_target *t);
/**
 * fs_view_open() - open generated file @t (a view, track or session summary;
 * its pointers into @idx, borrowed: a render that outlives the open takes a
 * reference) into @fh (borrowed; filled as FS_FH_CACHE or FS_FH_FD). *@size_changed:
 * the size differs from what getattr could have reported, so the caller must
 * drop the kernel's attributes. -EIO with the reason in the host's errors file
 * when the profile does not decode.
 */
int fs_view_open(struct fs_ctx *ctx, struct fs_index *idx, const struct fs_target *t,
		 struct fs_fh *fh, bool *size_changed);
/**
 * fs_view_reopen() - after a damaged cache block under @fh (the caller holds
 * @fh->lock), render mount path @mpath again and move the new content into
 * @fh. *@size_changed as for fs_view_open(). 0 or -EIO.
 */
int fs_view_reopen(struct fs_ctx *ctx, const char *mpath, struct fs_fh *fh, bool *size_changed);
/**
 * fs_view_pread() - read an open view (FS_FH_CACHE or FS_FH_FD: the caller
 * holds @fh->lock; FS_FH_LIVE: no lock needed, waits for the render).
 */
ssize_t fs_view_pread(struct fs_fh *fh, void *buf, size_t n, uint64_t off);
/** fs_view_fh_size() - the size of open view @fh: 0 while it still renders. */
uint64_t fs_view_fh_size(struct fs_fh *fh, bool *done);

/* ---- logdir/ writers (logdir.c; no FUSE) -------------------------------- */

/**
 * fs_logdir_writer() - a writer handle for store path @sp (borrowed),
 * applying the profile rules; @flags are open(2) flags, @mode the exact
 * permission bits of a file @create makes (the caller's mode, umask applied
 * by the kernel). Caller owns *@out (fs_fh_free() aborts an uncommitted
 * writer).
 */
int fs_logdir_writer(struct fs_ctx *ctx, const char *sp, bool create, int flags, mode_t mode,
		     struct fs_fh **out);
/** fs_writer_read() - pread from writer @fh. */
ssize_t fs_writer_read(struct fs_ctx *ctx, struct fs_fh *fh, void *buf, size_t n, uint64_t off);
/** fs_writer_write() - pwrite through writer @fh. */
ssize_t fs_writer_write(struct fs_ctx *ctx, struct fs_fh *fh, const void *buf, size_t n,
			uint64_t off);
/** fs_writer_truncate() - truncate through writer @fh. */
int fs_writer_truncate(struct fs_ctx *ctx, struct fs_fh *fh, uint64_t size);
/** fs_logdir_truncate() - truncate store file @sp with no open handle. */
int fs_logdir_truncate(struct fs_ctx *ctx, const char *sp, uint64_t size);
/** fs_writer_flush() - close()'s flush of writer @fh (@path: for the log). */
int fs_writer_flush(struct fs_ctx *ctx, struct fs_fh *fh, const char *path);
/** fs_writer_fsync() - fsync() of writer @fh: make its data durable (upload). */
int fs_writer_fsync(struct fs_fh *fh, const char *path);
/** fs_writer_release() - the last close of writer @fh: commit what is left (does not free). */
void fs_writer_release(struct fs_ctx *ctx, struct fs_fh *fh, const char *path);

/* ---- small files made in memory (status.c; no FUSE) ---------------------- */

/** fs_status_json() - MOUNT/status.json into @out. */
int fs_status_json(struct fs_ctx *ctx, struct xprofs_buf *out);
/**
 * fs_mem_content() - the current content of @t, which is status.json, a
 * host's errors file or a capture file, appended to @b. -EINVAL for other kinds.
 */
int fs_mem_content(struct fs_ctx *ctx, const struct fs_target *t, struct xprofs_buf *b);

/* ---- directory listings (dirs.c; no FUSE) -------------------------------- */

/* One name of a listing into the caller's buffer @arg; nonzero: it is full. */
typedef int (*fs_dir_fill)(void *arg, const char *name);
/**
 * fs_dir_list() - every name directory @t (borrowed, classified against an
 * index the caller holds) lists, "." and ".." first, through @fill. 0,
 * -ENOTDIR when @t is no directory, or the listing's -errno.
 */
int fs_dir_list(struct fs_ctx *ctx, const struct fs_target *t, fs_dir_fill fill, void *arg);

/* ---- attributes of mount entries (attr.c; no FUSE) ---------------------- */

struct stat;

/* The mode bits and owners one entry reports. */
struct fs_perm {
	mode_t mode;
	uid_t uid;
	gid_t gid;
};

/** fs_perm_own() - an entry of the mount itself: @mode, the mounting user's. */
struct fs_perm fs_perm_own(const struct fs_ctx *ctx, mode_t mode);
/** fs_perm_src() - a source object's own mode and owners, or the fixed ones (gs://: mode 0). */
struct fs_perm fs_perm_src(const struct fs_ctx *ctx, uint32_t mode, uint32_t uid, uint32_t gid,
			   bool dir);
/** fs_perm_host() - a host directory (@dir) or a file in it: as its profile is readable. */
struct fs_perm fs_perm_host(const struct fs_ctx *ctx, const struct fs_target *t, bool dir);
/**
 * fs_perm_session() - a session directory (@dir: its own bits) or its
 * summary.json/ops.json: readable only by whom may read the directory and
 * every host profile in it.
 */
struct fs_perm fs_perm_session(const struct fs_ctx *ctx, const struct fs_target *t, bool dir);
/**
 * fs_perm_compare() - compare/<other>/ (@dir: what both session directories
 * allow) or a file in it (also every host profile of both sessions).
 */
struct fs_perm fs_perm_compare(const struct fs_ctx *ctx, const struct fs_target *t, bool dir);
/**
 * fs_perm_readable() - whether user @uid (primary group @gid, supplementary
 * @groups: @ngroups of them, < 0 when unknown) may read a file with @p, as
 * default_permissions judges it (root always may).
 */
bool fs_perm_readable(struct fs_perm p, uid_t uid, gid_t gid, const gid_t *groups, int ngroups);
/** fs_set_ts() - @ns since the epoch into @ts. */
void fs_set_ts(struct timespec *ts, int64_t ns);
/** fs_fill_dir() - @st of a directory; @mtime_ns 0: the mount's start time. -o ro drops w bits. */
void fs_fill_dir(struct fs_ctx *ctx, struct stat *st, int64_t mtime_ns, struct fs_perm p);
/** fs_fill_file() - @st of a regular file of @size bytes. */
void fs_fill_file(struct fs_ctx *ctx, struct stat *st, uint64_t size, int64_t mtime_ns,
		  struct fs_perm p);
/**
 * fs_getattr() - @st of mount entry @t (borrowed, classified against an
 * index the caller holds): a logdir/ entry as the source has it (a symlink
 * as a symlink), a generated file with the size known so far. 0 or -errno
 * (-ENOENT: a plane or line its profile does not have).
 */
int fs_getattr(struct fs_ctx *ctx, const struct fs_target *t, struct stat *st);

/* ---- start-up (daemon.c) ------------------------------------------------ */

/**
 * fs_mountinfo_fuse_at() - whether one /proc/self/mountinfo line @line
 * ("ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS ... - TYPE ...", octal escapes
 * such as \040 undone; borrowed) is a FUSE mount ("fuse", "fuse.*") at
 * @dir; its type into @type (@tsize bytes).
 */
bool fs_mountinfo_fuse_at(const char *line, const char *dir, char *type, size_t tsize);

/* ---- the operations (ops.c) --------------------------------------------- */

struct fuse_operations;
/** fs_operations() - the FUSE operation table; private_data must be a struct fs_ctx. */
const struct fuse_operations *fs_operations(void);

#endif
