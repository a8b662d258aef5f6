/*
 * xprofs/util.h - the small shared toolkit every xprofs module builds on.
 *
 * - One logger with syslog levels. The sink is stderr (foreground) or syslog
 *   (daemonised); xprofs_debug() does not evaluate its arguments when debug
 *   logging is off.
 * - struct xprofs_buf: a growable byte buffer with a hard maximum (curl's
 *   dynbuf idea): every append checks the cap and fails with -E2BIG instead of
 *   growing without bound. Always NUL-terminated after a successful append.
 *   With it, JSON strings and members, and protobuf varints (the two writers').
 * - struct xprofs_sink / struct xprofs_reader: the two I/O seams that let the
 *   decoder, the cache and the storage backends meet without knowing each other
 *   (and without FUSE).
 * - struct xprofs_table: the one keyed hash table, an index from keys to the
 *   positions of entries the caller keeps in its own array.
 * - xprofs_args_parse(): the command-line tools' options, read through one
 *   table that says where each value goes.
 *
 * Thread safety: the logger is safe to call from any thread; a buffer or a
 * table belongs to one thread at a time.
 */
#ifndef XPROFS_UTIL_H
#define XPROFS_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define XPROFS_WUR __attribute__((warn_unused_result))

/* ---- logging ---------------------------------------------------------- */

enum xprofs_log_level {
	XPROFS_LOG_ERR = 3,
	XPROFS_LOG_WARNING = 4,
	XPROFS_LOG_NOTICE = 5,
	XPROFS_LOG_INFO = 6,
	XPROFS_LOG_DEBUG = 7,
};

/**
 * xprofs_log() - log one message at @level (printf format, no trailing \n needed).
 * Messages above the current level are dropped.
 */
void xprofs_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void xprofs_vlog(int level, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
void xprofs_log_set_level(int level);
int xprofs_log_get_level(void);
/** xprofs_log_use_syslog() - send messages to syslog (true) or stderr (false). */
void xprofs_log_use_syslog(bool on);
/** xprofs_log_level_parse() - "err|warning|notice|info|debug" or a digit; -EINVAL otherwise. */
int xprofs_log_level_parse(const char *s);

#define xprofs_err(...) xprofs_log(XPROFS_LOG_ERR, __VA_ARGS__)
#define xprofs_warn(...) xprofs_log(XPROFS_LOG_WARNING, __VA_ARGS__)
#define xprofs_info(...) xprofs_log(XPROFS_LOG_INFO, __VA_ARGS__)
#define xprofs_debug(...)                                                                          \
	do {                                                                                       \
		if (xprofs_log_get_level() >= XPROFS_LOG_DEBUG)                                    \
			xprofs_log(XPROFS_LOG_DEBUG, __VA_ARGS__);                                 \
	} while (0)

/* ---- bounded growable buffer ------------------------------------------ */

struct xprofs_buf {
	char *data; /* NULL until the first append; NUL-terminated after */
	size_t len;
	size_t cap;
	size_t max; /* hard cap on len; appends beyond it fail with -E2BIG */
};

/** xprofs_buf_init() - empty buffer that may grow to @max bytes. Allocates nothing. */
void xprofs_buf_init(struct xprofs_buf *b, size_t max);
/** xprofs_buf_deinit() - frees the storage; the buffer is empty and reusable after. */
void xprofs_buf_deinit(struct xprofs_buf *b);
/** xprofs_buf_reset() - length 0, keeps the allocation. */
void xprofs_buf_reset(struct xprofs_buf *b);
/** xprofs_buf_truncate() - length min(len, @n), keeps the allocation. */
void xprofs_buf_truncate(struct xprofs_buf *b, size_t n);
/** xprofs_buf_add() - append @n bytes (borrows @p). 0, -ENOMEM or -E2BIG (buffer unchanged). */
int xprofs_buf_add(struct xprofs_buf *b, const void *p, size_t n) XPROFS_WUR;
/** xprofs_buf_adds() - append the string @s (borrowed) without its NUL; as xprofs_buf_add(). */
int xprofs_buf_adds(struct xprofs_buf *b, const char *s) XPROFS_WUR;
/** xprofs_buf_printf() - append printf output; as xprofs_buf_add() (the buffer unchanged on error). */
int xprofs_buf_printf(struct xprofs_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3))) XPROFS_WUR;
int xprofs_buf_vprintf(struct xprofs_buf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0))) XPROFS_WUR;
/**
 * xprofs_utf8_seq_len() - the length of the valid UTF-8 sequence at @s (at
 * most @n bytes, @n > 0), or 0 when it is not one (overlong, surrogate,
 * past U+10FFFF, cut short): writers put U+FFFD there instead.
 */
size_t xprofs_utf8_seq_len(const unsigned char *s, size_t n);
/**
 * xprofs_buf_add_json_str() - append @s (@n bytes) as a quoted JSON string.
 * Control characters are escaped; invalid UTF-8 bytes become U+FFFD so the
 * output is always valid JSON whatever a profile contains.
 */
int xprofs_buf_add_json_str(struct xprofs_buf *b, const char *s, size_t n) XPROFS_WUR;
/**
 * xprofs_buf_add_json_member() - append @lit (a key with its punctuation, as
 * ",\"url\":"), then @s (a C string, borrowed) as a JSON string, or null
 * when @s is NULL: one member of a status object.
 */
int xprofs_buf_add_json_member(struct xprofs_buf *b, const char *lit, const char *s) XPROFS_WUR;
/**
 * xprofs_put_varint() - @v as a protobuf varint at @p (room for 10 bytes);
 * the bytes written. The encoder of both protobuf writers (xprofs-gen's,
 * trace.pftrace's); reading varints is wire/'s, apart on purpose.
 */
static inline size_t xprofs_put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}
/**
 * xprofs_buf_steal() - hand the storage to the caller (caller owns; free with
 * free()). Returns NULL for an empty, never-appended buffer. The buffer is
 * empty afterwards.
 */
char *xprofs_buf_steal(struct xprofs_buf *b, size_t *len);

/* ---- growable array --------------------------------------------------- */

/**
 * xprofs_grow() - make room for element @n of an array of @size-byte elements:
 * @arrayp is the address of the array pointer (e.g. &v, v NULL at first) and
 * *@cap its capacity. When @n == *@cap the array is reallocated to @first
 * elements, then to twice as many each time. 0, or -ENOMEM with the array and
 * *@cap untouched. The caller still owns the array (free()) and bounds @n.
 */
int xprofs_grow(void *arrayp, size_t *cap, size_t n, size_t size, size_t first) XPROFS_WUR;

/* ---- keyed hash table (table.c) -------------------------------------- */

/*
 * A hash index over the caller's entries: the caller keeps its entries in its
 * own array (usually grown with xprofs_grow(), so the order of the array is
 * the insertion order) and the table maps a key to an entry's position in it.
 * The table holds no keys, only each entry's position and 32 bits of its hash:
 * a look-up hashes the key (xprofs_table_hash(), chained over a composite
 * key's parts) and the caller's @eq compares the key with the candidates'
 * entries, so keys of any shape (byte strings, integers, tuples) are found
 * without being copied into the table. Entries cannot be removed.
 *
 *	uint64_t h = xprofs_table_hash(0, name, len);
 *	if (xprofs_table_find(t, h, name_eq, arr, &key, &i) == -ENOENT) {
 *		... append the entry at arr[n] ...
 *		r = xprofs_table_add(t, h, n);	// -ENOSPC past the table's maximum
 *	}
 */
struct xprofs_table;

/* The largest @max_entries of xprofs_table_new(). */
#define XPROFS_TABLE_MAX ((size_t)1 << 30)

/*
 * Whether entry @idx of the caller's entries (@ctx, what the caller passed to
 * xprofs_table_find()) has the key @key. Called only for entries whose hash
 * matches in 32 bits.
 */
typedef bool xprofs_table_eq_fn(const void *ctx, uint32_t idx, const void *key);

/**
 * xprofs_table_new() - an empty table for at most @max_entries entries (1 to
 * XPROFS_TABLE_MAX, else -EINVAL). It allocates its slots on the first add and
 * doubles them as it fills (at most half full: 16 to 32 bytes per entry).
 * 0 or -ENOMEM; *@out NULL on failure. Caller frees with xprofs_table_free().
 */
int xprofs_table_new(size_t max_entries, struct xprofs_table **out) XPROFS_WUR;
/** xprofs_table_free() - frees @t (NULL: nothing); the caller's entries are untouched. */
void xprofs_table_free(struct xprofs_table *t);
/** xprofs_table_count() - how many entries @t holds (0 for NULL). */
size_t xprofs_table_count(const struct xprofs_table *t);
/**
 * xprofs_table_hash() - the hash of @n bytes at @p (borrowed; @p may be NULL
 * when @n is 0) continuing from @h: 0 for a key's first part, the previous
 * result for each further part. Fast on long strings (eight bytes a step).
 * Seeded at random once per process, so a profile cannot be made to collide
 * on purpose: never stored or shown, and different from run to run.
 */
uint64_t xprofs_table_hash(uint64_t h, const void *p, size_t n);
/**
 * xprofs_table_find() - the entry with hash @hash (from xprofs_table_hash())
 * for which @eq(@ctx, idx, @key) holds: 0 and *@idx, or -ENOENT (*@idx
 * untouched). @t may be NULL (empty); @ctx and @key are borrowed for the call.
 */
int xprofs_table_find(const struct xprofs_table *t, uint64_t hash, xprofs_table_eq_fn *eq,
		      const void *ctx, const void *key, uint32_t *idx);
/**
 * xprofs_table_add() - entry @idx, whose key hashes to @hash, joins @t. The
 * caller makes sure its key is not in @t yet (xprofs_table_find()). 0,
 * -ENOSPC when @t holds its maximum already, -EINVAL for @idx UINT32_MAX,
 * -ENOMEM (@t unchanged on errors).
 */
int xprofs_table_add(struct xprofs_table *t, uint64_t hash, uint32_t idx) XPROFS_WUR;

/* ---- I/O seams -------------------------------------------------------- */

/*
 * A byte sink. write() consumes nothing (borrows @p) and returns 0 or -errno;
 * a sink never writes partially.
 *
 * A sink may also lend its own memory, so that a writer builds its bytes in
 * place instead of handing over a buffer to copy (the mount's streamed
 * renders: fs/live.c). room() returns at least @need writable bytes (their
 * number in *@got), or NULL: with *@err 0 the writer goes on with write()
 * (the sink cannot lend that much), else that -errno. commit() makes the
 * first @n bytes of the last room lent the sink's next bytes (0 or -errno);
 * the room is gone then, committed or not. Both NULL: write() only.
 */
struct xprofs_sink {
	int (*write)(void *arg, const void *p, size_t n);
	void *arg;
	void *(*room)(void *arg, size_t need, size_t *got, int *err);
	int (*commit)(void *arg, size_t n);
};

/**
 * xprofs_mirror_map() - @size bytes of memory (a multiple of the page size)
 * mapped twice in a row: byte i and byte i + @size are the same, so any
 * @size bytes from any offset below @size are contiguous (a ring buffer
 * needing no wrap-around copies). The caller frees it with
 * xprofs_mirror_unmap(); NULL when the system refuses (errno set).
 */
void *xprofs_mirror_map(size_t size);
/** xprofs_mirror_unmap() - free a xprofs_mirror_map() of @size; accepts NULL. */
void xprofs_mirror_unmap(void *p, size_t size);

/** xprofs_sink_buf() - a sink appending to @b (borrowed; must outlive the sink). */
struct xprofs_sink xprofs_sink_buf(struct xprofs_buf *b);
/** xprofs_sink_fd() - a sink writing all bytes to @fd (borrowed), retrying on EINTR. */
struct xprofs_sink xprofs_sink_fd(int *fd);

/*
 * A random-access byte source of known @size. pread() returns the number of
 * bytes read (short only at end of data), or -errno. @data, when not NULL,
 * is the whole content mapped in memory (zero-copy fast path; it stays valid
 * as long as the reader).
 */
struct xprofs_reader {
	ssize_t (*pread)(void *arg, void *buf, size_t n, uint64_t off);
	void *arg;
	uint64_t size;
	const uint8_t *data;
};

/**
 * xprofs_reader_mem() - a reader over @n bytes at @p (borrowed): only @data
 * and @size are set (pread is NULL); xprofs_reader_pread() serves it.
 */
struct xprofs_reader xprofs_reader_mem(const void *p, size_t n);
/**
 * xprofs_reader_pread() - read through @r: uses @r->data when set, else
 * @r->pread; clamps to @r->size. Bytes read, or -errno.
 */
ssize_t xprofs_reader_pread(const struct xprofs_reader *r, void *buf, size_t n, uint64_t off);

/** xprofs_pread_full() - pread until @n bytes or end of data; retries EINTR. */
ssize_t xprofs_pread_full(int fd, void *buf, size_t n, uint64_t off);
/**
 * xprofs_pread_ahead() - xprofs_pread_full() for a file read mostly forward
 * (a profile's passes): a read that crosses a XPROFS_AHEAD_STEP boundary
 * also asks the kernel to start reading the step XPROFS_AHEAD_DEPTH beyond
 * it (POSIX_FADV_WILLNEED, asynchronous), so that a cold file streams at the
 * disk's speed while the caller computes instead of one readahead window at
 * a time. Stateless: safe from any number of threads with their own
 * cursors; a random read costs at most one advice of one step.
 */
ssize_t xprofs_pread_ahead(int fd, void *buf, size_t n, uint64_t off);
#define XPROFS_AHEAD_STEP ((uint64_t)4 << 20)
#define XPROFS_AHEAD_DEPTH ((uint64_t)32 << 20)
/** xprofs_write_full() - write all @n bytes to @fd; 0 or -errno. */
int xprofs_write_full(int fd, const void *buf, size_t n) XPROFS_WUR;

/** xprofs_now_ns() - CLOCK_REALTIME in ns; xprofs_mono_ns() - CLOCK_MONOTONIC in ns. */
int64_t xprofs_now_ns(void);
int64_t xprofs_mono_ns(void);
/** xprofs_sleep_ms() - sleep @ms milliseconds, resumed after signals. */
void xprofs_sleep_ms(uint64_t ms);

/** xprofs_mkdir_p() - create @path and its parents (mode 0755); 0 or -errno. */
int xprofs_mkdir_p(const char *path) XPROFS_WUR;

/**
 * xprofs_tmpdir() - where temporary files go: @dir (borrowed) when set and
 * not empty, else $TMPDIR when set and not empty, else "/tmp". Returns @dir,
 * the environment's string or a literal: borrowed, never NULL.
 */
const char *xprofs_tmpdir(const char *dir);

/**
 * xprofs_tmpfile() - an unlinked temporary file in xprofs_tmpdir(@dir) (@dir
 * may be NULL), read-write, close-on-exec: O_TMPFILE, or where the directory
 * does not support it a "@prefix-XXXXXX" file unlinked at once. Returns the
 * fd (caller closes it) or -errno.
 */
int xprofs_tmpfile(const char *dir, const char *prefix) XPROFS_WUR;

/**
 * xprofs_size_parse() - a byte count: decimal digits with an optional binary
 * suffix K, M, G or T (also "Ki"/"KiB"/"KB" forms) and an optional final
 * "B" ("100B"); no sign, no overflow.
 * 0 or -EINVAL (*@out untouched).
 */
int xprofs_size_parse(const char *s, uint64_t *out) XPROFS_WUR;

/* ---- command lines ----------------------------------------------------- */

/* What an option does with its value (xprofs_args_parse()). */
enum xprofs_arg_kind {
	XPROFS_ARG_FLAG, /* no value: *(bool *)dst = true */
	XPROFS_ARG_STR,  /* *(const char **)dst = the value (borrowed from argv) */
	XPROFS_ARG_FN,   /* parse(value, dst): 0, or < 0 for a bad value */
	XPROFS_ARG_STOP, /* no value: xprofs_args_parse() returns at once (--help) */
};

/* One option of a command line: "--name", and "-letter" too unless 0. */
struct xprofs_arg {
	const char *name;
	char letter;
	enum xprofs_arg_kind kind;
	void *dst;
	int (*parse)(const char *value, void *dst); /* XPROFS_ARG_FN only */
	const char *want; /* XPROFS_ARG_FN: a good value, for "--name wants WANT, not 'X'" */
};

#define XPROFS_ARGS_MAX 32

/**
 * xprofs_args_parse() - read the options of argv (getopt_long()) as the @n
 * entries of @args say. Returns -1 once they are read (optind: the first
 * operand), the index in @args of an XPROFS_ARG_STOP option met, or -2 for
 * a bad command line (an unknown option, a missing or bad value: the reason
 * printed on stderr after "@prog: "; more than XPROFS_ARGS_MAX entries).
 */
int xprofs_args_parse(const char *prog, int argc, char **argv, const struct xprofs_arg *args,
		      size_t n) XPROFS_WUR;

/** xprofs_hash64() - FNV-1a 64 of @n bytes; stable across runs and machines. */
uint64_t xprofs_hash64(const void *p, size_t n);

#endif
