/*
 * fs/fs-internal.h - what the files of the fs module share: the options
 * struct, the runs index (index.c, FUSE-free and unit-tested with a fake
 * store), path resolution into targets, and the mount context.
 */
#ifndef XPROFS_FS_INTERNAL_H
#define XPROFS_FS_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "xprofs/cache.h"
#include "xprofs/capture.h"
#include "xprofs/store.h"
#include "xprofs/util.h"

#define FS_ROOT_RUN "_root"       /* how the logdir-root run is shown under runs/ */
#define FS_HOST_SUFFIX ".xplane.pb"
#define FS_NAME_MAX 255
#define FS_PATH_MAX 4096
#define FS_IO_SIZE (256 << 10) /* st_blksize of files: one cache block per FUSE read */
#define FS_INDEX_MAX_DEPTH 32
#define FS_INDEX_MAX_ENTRIES 1000000 /* listed entries per rebuild */

/* The one options struct every -o option lands in (options.c). */
struct xprofs_options {
	char *source;     /* owned */
	char *mountpoint; /* owned */
	int ro;
	int no_cache;
	int anonymous;
	int foreground;
	int debug;
	int single;       /* -s: single-threaded loop */
	int refresh;      /* seconds; -1 = backend default */
	unsigned connections;
	char *cache_dir;  /* owned */
	char *cache_max;  /* owned, e.g. "2G" */
	uint64_t cache_max_bytes;
	int cache_accel;  /* lz4 acceleration of cache entries; 0 = the cache's default */
	char *loglevel;   /* owned */
	char *endpoint;   /* owned */
	char *credentials; /* owned */
	int show_help;
	int show_version;
};

/* ---- runs index (index.c) --------------------------------------------- */

struct fs_host {
	char *name; /* file name minus ".xplane.pb"; owned */
	struct xprofs_store_stat st;
};

struct fs_session {
	char *name; /* owned */
	struct fs_host *hosts; /* sorted by name; owned */
	size_t nhosts;
	int64_t mtime_ns;
};

struct fs_run_node {
	char *name;       /* this component; owned */
	char *path;       /* store path of the run ("" = logdir root); owned; NULL unless is_run */
	bool is_run;      /* <path>/plugins/profile exists */
	struct fs_run_node **children; /* nested runs / intermediate dirs, sorted; owned */
	size_t nchildren;
	struct fs_session *sessions; /* sorted by name; owned */
	size_t nsessions;
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
	FS_K_ROOT,         /* / */
	FS_K_STATUS,       /* /status.json */
	FS_K_CAPTURE,      /* /capture or /runs/<run>/capture (run set) */
	FS_K_LOGDIR,       /* /logdir[/...]: store_path */
	FS_K_RUNS,         /* /runs or an inner run node (node set) */
	FS_K_SESSION,      /* session dir */
	FS_K_SESSION_SUMMARY,
	FS_K_HOST,         /* host dir */
	FS_K_VIEW,         /* host/<view>.json (view set) */
	FS_K_ERRORS,       /* host/errors */
	FS_K_PLANES,       /* host/planes */
	FS_K_PLANE,        /* host/planes/<plane> */
	FS_K_TRACK,        /* host/planes/<plane>/<line> */
};

/* Where a mount path points. Pointers borrow the index and the path. */
struct fs_target {
	enum fs_kind kind;
	const char *store_path;             /* FS_K_LOGDIR: into the path ("" = root) */
	const struct fs_run_node *node;     /* FS_K_RUNS, _CAPTURE (NULL: root capture), and below */
	const struct fs_session *session;
	const struct fs_host *host;
	int view;                           /* enum xprofs_view */
	char plane[FS_NAME_MAX + 1];
	char line[FS_NAME_MAX + 1];
};

/**
 * fs_path_classify() - resolve mount path @path ("/..."; borrowed, must
 * outlive @t) against @idx (borrowed; may be NULL when only the static part
 * is needed). Syntax only below planes/: whether a plane/line exists needs
 * the track list. 0, or -ENOENT / -ENAMETOOLONG / -EINVAL.
 */
int fs_path_classify(const struct fs_index *idx, const char *path, struct fs_target *t);

/** fs_is_profile_name() - true when @name ends in ".xplane.pb" (the no-overwrite rule). */
bool fs_is_profile_name(const char *name);

/* ---- options (options.c) ---------------------------------------------- */


/* ---- the mount (ops.c) ------------------------------------------------- */

#define FS_SIZES 1024     /* remembered sizes of rendered files (hash slots) */
#define FS_ERRHOSTS 256   /* hosts whose decode errors are remembered */
#define FS_ERRMAX 8192    /* bytes of error text per host */
#define FS_TRACKS 32      /* track lists kept in memory (LRU) */
#define FS_INFLIGHT 64    /* concurrent distinct renders */
#define FS_MEM_MAX (16u << 20) /* status.json / capture / errors snapshots */

struct fs_track_list {
	uint64_t key;  /* hash of path + size + mtime + generation; 0 = free slot */
	uint64_t used; /* LRU tick */
	size_t n;
	char **planes; /* owned */
	char **lines;  /* owned */
};

struct fs_errors {
	char *path; /* host store path; owned */
	uint64_t ver; /* the profile version the text is about */
	struct xprofs_buf text;
};

struct fs_counters {
	uint64_t lookups, readdirs, opens, bytes_read, bytes_written;
	uint64_t renders, render_errors, render_waits, view_hits, index_builds;
};

struct fs_ctx {
	struct xprofs_options *o;        /* borrowed */
	struct xprofs_store *store;      /* owned */
	struct xprofs_cache *cache;      /* owned; NULL: no cache (render to temp files) */
	struct xprofs_capture *capture;  /* owned; NULL when unavailable */
	const char *tmp_dir;             /* where unlinked render files go */
	int64_t start_mono_ns;
	int64_t refresh_ns;
	uid_t uid;
	gid_t gid;

	pthread_mutex_t index_lock;
	pthread_cond_t index_cond;       /* signalled when a rebuild ends */
	struct fs_index *index;          /* protected by index_lock */
	bool index_building;             /* protected by index_lock */
	int index_dirty;                 /* atomic */

	pthread_mutex_t lock;            /* protects everything below */
	pthread_cond_t cond;             /* signalled when a render ends */
	uint64_t sizes_key[FS_SIZES];
	uint64_t sizes_val[FS_SIZES];
	struct fs_errors errors[FS_ERRHOSTS];
	size_t errors_next;
	struct fs_track_list tracks[FS_TRACKS];
	uint64_t tick;
	uint64_t inflight[FS_INFLIGHT];

	struct fs_counters c;            /* atomic */
};

/** fs_ctx_init() - set up @ctx for @o (borrowed) over @store (consumed) and @cache (consumed, may be NULL). */
int fs_ctx_init(struct fs_ctx *ctx, struct xprofs_options *o, struct xprofs_store *store,
		struct xprofs_cache *cache);
void fs_ctx_deinit(struct fs_ctx *ctx);
/** fs_invalidate_index() - the next runs/ access rebuilds the index. */
void fs_invalidate_index(struct fs_ctx *ctx);
struct fuse_operations;
/** fs_operations() - the FUSE operation table (ops.c); private_data must be a struct fs_ctx. */
const struct fuse_operations *fs_operations(void);
/** fs_status_json() - MOUNT/status.json into @out. */
int fs_status_json(struct fs_ctx *ctx, struct xprofs_buf *out);

#endif
