/*
 * fs/attr.c - what getattr reports for each kind of mount entry: modes,
 * owners and times (the kernel checks permissions against them:
 * default_permissions). No FUSE here.
 *
 * Design (docs/fs.md "Permissions"):
 * - logdir/: the source's own modes, owners and times; a source without
 *   modes (gs://) shows uid=/gid= (default: the mounting user) and
 *   0666/0777 & ~umask=.
 * - runs/: a host directory and its views are readable (and searchable)
 *   exactly by whom may read the profile (read bits only; a profile reached
 *   through a symlink is its target: the index stats through links); a
 *   session directory as the session directory (no write bits);
 *   compare/<other>/ as both session directories allow (meet()). A file
 *   made from several profiles (summary.json, ops.json of a session,
 *   compare/<other>/ files) is readable only by whom may read its session
 *   directories and every profile in it (meet() of them all): what a reader
 *   may not read is never in what they get, cached or not;
 *   a run as its plugins/profile directory (write bits kept: mkdir of a
 *   nested run needs them, as in the source).
 * - The mount's own entries (/, runs/, intermediate directories, status.json,
 *   capture files) belong to the mounting user: capture is 0644, so only that
 *   user (and root) may write it, even with allow_other.
 * With -o ro every write bit is dropped.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "fs-internal.h"

struct fs_perm fs_perm_own(const struct fs_ctx *ctx, mode_t mode)
{
	return (struct fs_perm){mode, ctx->uid, ctx->gid};
}

/* fs_perm_src() - an object of the source: its own mode and owners, or the fixed ones (gs://). */
struct fs_perm fs_perm_src(const struct fs_ctx *ctx, uint32_t mode, uint32_t uid, uint32_t gid,
			   bool dir)
{
	if (mode)
		return (struct fs_perm){mode & 07777, uid, gid};
	return (struct fs_perm){(dir ? 0777 : 0666) & ~ctx->o->umask, ctx->o->uid, ctx->o->gid};
}

/* made_from() - a file (@dir: a directory) generated from @p: read bits, plus x where readable. */
static struct fs_perm made_from(struct fs_perm p, bool dir)
{
	mode_t r = p.mode & 0444;

	p.mode = dir ? r | (r >> 2) : r;
	return p;
}

struct fs_perm fs_perm_host(const struct fs_ctx *ctx, const struct fs_target *t, bool dir)
{
	const struct xprofs_store_stat *h = &t->host->st;

	return made_from(fs_perm_src(ctx, h->mode, h->uid, h->gid, false), dir);
}

/* class_bits() - the rwx bits @m grants class @shift (6: owner, 3: group, 0: others). */
static mode_t class_bits(mode_t m, int shift)
{
	return (m >> shift) & 7;
}

/*
 * meet() - the attributes of a file made from what @p and @q guard: @p's
 * owners, and in each class of @p only the bits that @q grants every user
 * who may fall in that class. The kernel judges a user by one class only
 * (owner, else group, else others), and which class of @q a user of @p's
 * class falls in is not always known (group membership is not), so the
 * bits are those of every class of @q the user might fall in. Whoever
 * passes the result passes @p and @q.
 */
static struct fs_perm meet(struct fs_perm p, struct fs_perm q)
{
	bool uid = p.uid == q.uid, gid = p.gid == q.gid;
	mode_t qo = class_bits(q.mode, 6), qg = class_bits(q.mode, 3), qa = class_bits(q.mode, 0);
	/* @p's owner is @q's owner, else in @q's group or not */
	mode_t own = uid ? qo : qg & qa;
	/* anyone else may be @q's owner when the owners differ */
	mode_t not_owner = uid ? 7 : qo;
	/* @p's group members: in @q's group when it is the same, else maybe */
	mode_t grp = not_owner & (gid ? qg : qg & qa);
	/* the others: not in @q's group when it is the same, else maybe */
	mode_t oth = not_owner & (gid ? qa : qg & qa);

	p.mode &= ~0777u | own << 6 | grp << 3 | oth;
	return p;
}

/* hosts_meet() - @p met with the views of every host of @s: readable only by who reads all. */
static struct fs_perm hosts_meet(const struct fs_ctx *ctx, struct fs_perm p,
				 const struct fs_session *s)
{
	for (size_t i = 0; i < s->nhosts; i++) {
		const struct xprofs_store_stat *h = &s->hosts[i].st;

		p = meet(p, made_from(fs_perm_src(ctx, h->mode, h->uid, h->gid, false), false));
	}
	return p;
}

/* session_dir() - session directory @s's own bits (no write bits), as a dir (@dir) or a file. */
static struct fs_perm session_dir(const struct fs_ctx *ctx, const struct fs_session *s, bool dir)
{
	struct fs_perm p = fs_perm_src(ctx, s->mode, s->uid, s->gid, true);

	p.mode &= dir ? 0555 : 0444;
	return p;
}

struct fs_perm fs_perm_session(const struct fs_ctx *ctx, const struct fs_target *t, bool dir)
{
	struct fs_perm p = session_dir(ctx, t->session, dir);

	return dir ? p : hosts_meet(ctx, p, t->session);
}

struct fs_perm fs_perm_compare(const struct fs_ctx *ctx, const struct fs_target *t, bool dir)
{
	struct fs_perm p = meet(session_dir(ctx, t->session, dir), session_dir(ctx, t->other, dir));

	return dir ? p : hosts_meet(ctx, hosts_meet(ctx, p, t->session), t->other);
}

bool fs_perm_readable(struct fs_perm p, uid_t uid, gid_t gid, const gid_t *groups, int ngroups)
{
	bool member = gid == p.gid;

	if (uid == 0)
		return true; /* CAP_DAC_READ_SEARCH, as the kernel lets root read */
	if (uid == p.uid)
		return class_bits(p.mode, 6) & 4;
	for (int i = 0; i < ngroups && !member; i++)
		member = groups[i] == p.gid;
	if (member)
		return class_bits(p.mode, 3) & 4;
	if (ngroups < 0) /* unknown groups: in @p's group or not */
		return class_bits(p.mode, 3) & class_bits(p.mode, 0) & 4;
	return class_bits(p.mode, 0) & 4;
}

void fs_set_ts(struct timespec *ts, int64_t ns)
{
	ts->tv_sec = ns / 1000000000LL;
	ts->tv_nsec = ns % 1000000000LL;
}

void fs_fill_dir(struct fs_ctx *ctx, struct stat *st, int64_t mtime_ns, struct fs_perm p)
{
	memset(st, 0, sizeof(*st));
	st->st_mode = S_IFDIR | (ctx->o->ro ? p.mode & ~0222u : p.mode);
	st->st_nlink = 2;
	st->st_uid = p.uid;
	st->st_gid = p.gid;
	if (!mtime_ns)
		mtime_ns = xprofs_now_ns() - (xprofs_mono_ns() - ctx->start_mono_ns);
	fs_set_ts(&st->st_mtim, mtime_ns);
	st->st_atim = st->st_ctim = st->st_mtim;
}

void fs_fill_file(struct fs_ctx *ctx, struct stat *st, uint64_t size, int64_t mtime_ns,
		  struct fs_perm p)
{
	fs_fill_dir(ctx, st, mtime_ns, p);
	st->st_mode = S_IFREG | (st->st_mode & 07777);
	st->st_nlink = 1;
	st->st_size = (off_t)size;
	/*
	 * The preferred I/O size sizes cat's and most readers' buffers. 256 KiB
	 * (the cache's block size) lets a sequential read of a view decompress
	 * each block straight into the FUSE buffer; 128 KiB reads go through the
	 * entry's block copy, and 1 MiB reads measured no faster (bench/mount.sh,
	 * docs/fs.md).
	 */
	st->st_blksize = FS_IO_SIZE;
	st->st_blocks = (blkcnt_t)((size + 511) / 512);
}

/* logdir_getattr() - a logdir/ entry as the source has it; a symlink as a symlink. */
static int logdir_getattr(struct fs_ctx *ctx, const char *sp, struct stat *st)
{
	struct xprofs_store_stat ss;
	struct fs_perm p;
	int r;

	r = xprofs_store_lstat(ctx->store, sp, &ss);
	if (r < 0)
		return r;
	p = fs_perm_src(ctx, ss.mode, ss.uid, ss.gid, ss.type == XPROFS_STORE_DIR);
	if (ss.type == XPROFS_STORE_DIR) {
		fs_fill_dir(ctx, st, ss.mtime_ns, p);
	} else {
		fs_fill_file(ctx, st, ss.size, ss.mtime_ns, p);
		if (ss.type == XPROFS_STORE_LINK)
			st->st_mode = S_IFLNK | 0777;
	}
	if (ss.atime_ns)
		fs_set_ts(&st->st_atim, ss.atime_ns);
	if (ss.ctime_ns)
		fs_set_ts(&st->st_ctim, ss.ctime_ns);
	return 0;
}

int fs_getattr(struct fs_ctx *ctx, const struct fs_target *t, struct stat *st)
{
	struct fs_track_list *tl;
	struct xprofs_buf b;
	bool found = false;
	int r;

	xprofs_buf_init(&b, FS_MEM_MAX);
	switch (t->kind) {
	case FS_K_ROOT:
		fs_fill_dir(ctx, st, 0, fs_perm_own(ctx, 0755));
		return 0;
	case FS_K_RUNS:
		fs_fill_dir(ctx, st, 0,
			    t->node->is_run ? fs_perm_src(ctx, t->node->mode, t->node->uid,
							  t->node->gid, true)
					    : fs_perm_own(ctx, 0755));
		return 0;
	case FS_K_SESSION:
	case FS_K_COMPARE:
	case FS_K_COMPARE_RUN:
		fs_fill_dir(ctx, st, t->session->mtime_ns, fs_perm_session(ctx, t, true));
		return 0;
	case FS_K_COMPARE_DIR:
		fs_fill_dir(ctx, st, t->session->mtime_ns, fs_perm_compare(ctx, t, true));
		return 0;
	case FS_K_SLICE: /* a step past the last does not exist (the count is remembered) */
	case FS_K_LOD:
		if ((r = fs_step_check(ctx, t)) < 0)
			return r;
		/* fall through */
	case FS_K_HOST:
	case FS_K_PLANES:
	case FS_K_STEPS:
	case FS_K_WINDOWS:
		fs_fill_dir(ctx, st, t->host->st.mtime_ns, fs_perm_host(ctx, t, true));
		return 0;
	case FS_K_STATUS:
	case FS_K_CAPTURE:
	case FS_K_ERRORS:
		/* small and in memory: report the size the content has now */
		r = fs_mem_content(ctx, t, &b);
		fs_fill_file(ctx, st, r == 0 ? b.len : 0,
			     t->kind == FS_K_ERRORS ? t->host->st.mtime_ns : 0,
			     t->kind == FS_K_ERRORS    ? fs_perm_host(ctx, t, false)
			     : t->kind == FS_K_CAPTURE ? fs_perm_own(ctx, 0644)
						       : fs_perm_own(ctx, 0444));
		xprofs_buf_deinit(&b);
		return 0;
	case FS_K_VIEW:
		if ((r = fs_step_check(ctx, t)) < 0)
			return r;
		/* without GPU planes (known from an earlier index): no kernels.json */
		if (t->view == XPROFS_VIEW_KERNELS && fs_host_lacks_gpu(ctx, t))
			return -ENOENT;
		fs_fill_file(ctx, st, fs_view_size(ctx, t), t->host->st.mtime_ns,
			     fs_perm_host(ctx, t, false));
		return 0;
	case FS_K_SESSION_SUMMARY:
	case FS_K_SESSION_OPS:
	case FS_K_SESSION_VIEW:
	case FS_K_COMPARE_VIEW:
		fs_fill_file(ctx, st, fs_view_size(ctx, t), t->session->mtime_ns,
			     t->kind == FS_K_COMPARE_VIEW ? fs_perm_compare(ctx, t, false)
							  : fs_perm_session(ctx, t, false));
		return 0;
	case FS_K_PLANE:
	case FS_K_TRACK:
		r = fs_tracks_get(ctx, t, &tl);
		if (r < 0)
			return r;
		for (size_t i = 0; i < tl->n && !found; i++)
			found = !strcmp(tl->planes[i], t->plane) &&
				(t->kind == FS_K_PLANE || !strcmp(tl->lines[i], t->line));
		pthread_mutex_unlock(&ctx->views.lock);
		if (!found)
			return -ENOENT;
		if (t->kind == FS_K_PLANE)
			fs_fill_dir(ctx, st, t->host->st.mtime_ns, fs_perm_host(ctx, t, true));
		else
			fs_fill_file(ctx, st, fs_view_size(ctx, t), t->host->st.mtime_ns,
				     fs_perm_host(ctx, t, false));
		return 0;
	case FS_K_LOGDIR:
		return logdir_getattr(ctx, t->store_path, st);
	default:
		return -ENOENT;
	}
}
