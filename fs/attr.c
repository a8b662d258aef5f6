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
 *   exactly by whom may read the profile (read bits only); a session
 *   directory and its summary.json as the session directory (no write bits);
 *   compare/<other>/ and its files as both session directories allow (the
 *   bits of each; the other's "others" bits for every class when the two
 *   have different owners), so no one reads numbers made from a session
 *   they could not list;
 *   a run as its plugins/profile directory (write bits kept: mkdir of a
 *   nested run needs them, as in the source).
 * - The mount's own entries (/, runs/, intermediate directories, status.json,
 *   capture files) belong to the mounting user: capture is 0644, so only that
 *   user (and root) may write it, even with allow_other.
 * With -o ro every write bit is dropped.
 */
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

struct fs_perm fs_perm_session(const struct fs_ctx *ctx, const struct fs_target *t, bool dir)
{
	const struct fs_session *s = t->session;
	struct fs_perm p = fs_perm_src(ctx, s->mode, s->uid, s->gid, true);

	p.mode &= dir ? 0555 : 0444;
	return p;
}

struct fs_perm fs_perm_compare(const struct fs_ctx *ctx, const struct fs_target *t, bool dir)
{
	const struct fs_session *o = t->other;
	struct fs_perm p = fs_perm_session(ctx, t, dir);
	struct fs_perm q = fs_perm_src(ctx, o->mode, o->uid, o->gid, true);
	mode_t m = q.mode & 0777, oth = m & 07;

	if (q.uid != p.uid || q.gid != p.gid)
		m = oth | oth << 3 | oth << 6;
	p.mode &= m;
	return p;
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
