/*
 * io.c - the I/O seams (sinks, readers) and small POSIX helpers shared by all
 * modules: full reads/writes with EINTR handling, mkdir -p, unlinked temporary
 * files, clocks, hashing, byte-count parsing, mirrored memory (a ring mapped
 * twice). Stateless: every function is safe from any thread. Sinks and
 * readers borrow what they wrap; nothing here allocates but the mirror maps.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "xprofs/util.h"

static int sink_buf_write(void *arg, const void *p, size_t n)
{
	return xprofs_buf_add(arg, p, n);
}

struct xprofs_sink xprofs_sink_buf(struct xprofs_buf *b)
{
	return (struct xprofs_sink){.write = sink_buf_write, .arg = b};
}

static int sink_fd_write(void *arg, const void *p, size_t n)
{
	return xprofs_write_full(*(int *)arg, p, n);
}

struct xprofs_sink xprofs_sink_fd(int *fd)
{
	return (struct xprofs_sink){.write = sink_fd_write, .arg = fd};
}

void *xprofs_mirror_map(size_t size)
{
	int fd = memfd_create("xprofs-mirror", MFD_CLOEXEC), e;
	uint8_t *base = MAP_FAILED;

	if (fd < 0)
		return NULL;
	if (ftruncate(fd, (off_t)size) == 0)
		base = mmap(NULL, 2 * size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	/* the two halves over the reservation: nothing else can land in between */
	if (base != MAP_FAILED && (mmap(base, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
					fd, 0) == MAP_FAILED ||
				   mmap(base + size, size, PROT_READ | PROT_WRITE,
					MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)) {
		e = errno;
		munmap(base, 2 * size);
		errno = e;
		base = MAP_FAILED;
	}
	e = errno;
	close(fd);
	errno = e;
	return base == MAP_FAILED ? NULL : base;
}

void xprofs_mirror_unmap(void *p, size_t size)
{
	if (p)
		munmap(p, 2 * size);
}

struct xprofs_reader xprofs_reader_mem(const void *p, size_t n)
{
	return (struct xprofs_reader){.pread = NULL, .arg = NULL, .size = n, .data = p};
}

ssize_t xprofs_reader_pread(const struct xprofs_reader *r, void *buf, size_t n, uint64_t off)
{
	if (off >= r->size)
		return 0;
	if (n > r->size - off)
		n = (size_t)(r->size - off);
	if (r->data) {
		memcpy(buf, r->data + off, n);
		return (ssize_t)n;
	}
	if (!r->pread)
		return -EINVAL;
	return r->pread(r->arg, buf, n, off);
}

ssize_t xprofs_pread_full(int fd, void *buf, size_t n, uint64_t off)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = pread(fd, (char *)buf + done, n - done, (off_t)(off + done));

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

ssize_t xprofs_pread_ahead(int fd, void *buf, size_t n, uint64_t off)
{
	uint64_t step = off / XPROFS_AHEAD_STEP, next = (off + n) / XPROFS_AHEAD_STEP;

	/* the first read also starts the steps before the first boundary's */
	if (off == 0)
		(void)posix_fadvise(fd, (off_t)n, (off_t)XPROFS_AHEAD_DEPTH, POSIX_FADV_WILLNEED);
	if (next != step)
		(void)posix_fadvise(fd, (off_t)(next * XPROFS_AHEAD_STEP + XPROFS_AHEAD_DEPTH),
				    (off_t)XPROFS_AHEAD_STEP, POSIX_FADV_WILLNEED);
	return xprofs_pread_full(fd, buf, n, off);
}

int xprofs_write_full(int fd, const void *buf, size_t n)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = write(fd, (const char *)buf + done, n - done);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)r;
	}
	return 0;
}

int64_t xprofs_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t xprofs_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void xprofs_sleep_ms(uint64_t ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int xprofs_mkdir_p(const char *path)
{
	char tmp[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0)
		return 0;
	if (len >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, path, len + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

const char *xprofs_tmpdir(const char *dir)
{
	if (!dir || !*dir)
		dir = getenv("TMPDIR");
	return dir && *dir ? dir : "/tmp";
}

int xprofs_tmpfile(const char *dir, const char *prefix)
{
	char tmpl[PATH_MAX];
	int fd, n;

	dir = xprofs_tmpdir(dir);
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
	/* No O_TMPFILE there (old kernel, some file systems): a named file, unlinked at once. */
	n = snprintf(tmpl, sizeof(tmpl), "%s/%s-XXXXXX", dir, prefix);
	if (n < 0 || (size_t)n >= sizeof(tmpl))
		return -ENAMETOOLONG;
	fd = mkostemp(tmpl, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	unlink(tmpl);
	return fd;
}

uint64_t xprofs_hash64(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

int xprofs_size_parse(const char *s, uint64_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k':
	case 'K':
		shift = 10;
		end++;
		break;
	case 'm':
	case 'M':
		shift = 20;
		end++;
		break;
	case 'g':
	case 'G':
		shift = 30;
		end++;
		break;
	case 't':
	case 'T':
		shift = 40;
		end++;
		break;
	default:
		break;
	}
	if (shift && *end == 'i')
		end++;
	if (*end == 'B')
		end++;
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}
