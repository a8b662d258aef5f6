/*
 * log.c - the one logger. Level and sink are process-wide atomics so any
 * thread may log; each message is formatted into a local buffer and written
 * with one write() so concurrent lines do not interleave.
 * Limit: a line is cut at 2 KiB (the stack buffer); nothing is allocated.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <unistd.h>

#include "xprofs/util.h"

static atomic_int log_level = XPROFS_LOG_NOTICE;
static atomic_bool log_syslog = false;

void xprofs_log_set_level(int level)
{
	if (level < XPROFS_LOG_ERR)
		level = XPROFS_LOG_ERR;
	if (level > XPROFS_LOG_DEBUG)
		level = XPROFS_LOG_DEBUG;
	atomic_store(&log_level, level);
}

int xprofs_log_get_level(void)
{
	return atomic_load(&log_level);
}

void xprofs_log_use_syslog(bool on)
{
	if (on)
		openlog("xprofs", LOG_PID, LOG_DAEMON);
	atomic_store(&log_syslog, on);
}

int xprofs_log_level_parse(const char *s)
{
	static const char *const names[] = {"err", "warning", "notice", "info", "debug"};

	if (!s || !*s)
		return -EINVAL;
	if (s[0] >= '3' && s[0] <= '7' && s[1] == '\0')
		return s[0] - '0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcasecmp(s, names[i]))
			return (int)i + XPROFS_LOG_ERR;
	if (!strcasecmp(s, "error"))
		return XPROFS_LOG_ERR;
	if (!strcasecmp(s, "warn"))
		return XPROFS_LOG_WARNING;
	return -EINVAL;
}

void xprofs_vlog(int level, const char *fmt, va_list ap)
{
	static const char *const tags[] = {"error", "warning", "notice", "info", "debug"};
	char line[2048];
	int saved = errno;
	int n;

	if (level > atomic_load(&log_level))
		goto out;
	if (atomic_load(&log_syslog)) {
		vsyslog(level, fmt, ap);
		goto out;
	}
	n = snprintf(line, sizeof(line), "xprofs: %s: ",
		     tags[(level < XPROFS_LOG_ERR ? XPROFS_LOG_ERR : level) - XPROFS_LOG_ERR]);
	if (n < 0)
		goto out;
	n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	if (n >= (int)sizeof(line) - 1)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0) {
		/* nowhere left to report it */
	}
out:
	errno = saved;
}

void xprofs_log(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	xprofs_vlog(level, fmt, ap);
	va_end(ap);
}
