/*
 * fs/handles.c - the open-file handle (struct fs_fh): what one open() of a
 * mount file holds, made here and freed here whatever kind it is (store
 * reader or writer, rendered view, render in progress, memory snapshot,
 * capture input). No FUSE here.
 *
 * Design: every handle not freed yet is on one list, so teardown can free
 * those whose RELEASE the kernel never sent (fs_fh_free_unreleased()) and
 * status.json can count them. One mount per process, so one list; its lock
 * is a leaf.
 */
#include <stdlib.h>
#include <unistd.h>

#include "fs-internal.h"

static pthread_mutex_t fh_open_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fs_fh *fh_open;

struct fs_fh *fs_fh_new(enum fs_fh_kind kind)
{
	struct fs_fh *fh = calloc(1, sizeof(*fh));

	if (fh) {
		fh->kind = kind;
		fh->fd = -1;
		pthread_mutex_init(&fh->lock, NULL);
		pthread_mutex_lock(&fh_open_lock);
		fh->open_next = fh_open;
		if (fh_open)
			fh_open->open_prev = fh;
		fh_open = fh;
		pthread_mutex_unlock(&fh_open_lock);
	}
	return fh;
}

uint64_t fs_fh_count(void)
{
	uint64_t n = 0;

	pthread_mutex_lock(&fh_open_lock);
	for (struct fs_fh *fh = fh_open; fh; fh = fh->open_next)
		n++;
	pthread_mutex_unlock(&fh_open_lock);
	return n;
}

void fs_fh_free_unreleased(void)
{
	struct fs_fh *fh;
	unsigned n = 0;

	for (;;) {
		pthread_mutex_lock(&fh_open_lock);
		fh = fh_open;
		pthread_mutex_unlock(&fh_open_lock);
		if (!fh)
			break;
		fs_fh_free(fh);
		n++;
	}
	if (n)
		xprofs_debug("freed %u handles the kernel never released", n);
}

void fs_fh_free(struct fs_fh *fh)
{
	if (!fh)
		return;
	pthread_mutex_lock(&fh_open_lock);
	if (fh->open_prev)
		fh->open_prev->open_next = fh->open_next;
	else
		fh_open = fh->open_next;
	if (fh->open_next)
		fh->open_next->open_prev = fh->open_prev;
	pthread_mutex_unlock(&fh_open_lock);
	xprofs_store_reader_close(fh->rf);
	xprofs_store_writer_abort(fh->w);
	if (fh->fd >= 0)
		close(fh->fd);
	xprofs_cache_reader_close(fh->ce);
	fs_live_close(fh->live);
	free(fh->mem);
	free(fh->run);
	xprofs_capture_input_free(fh->cin);
	free(fh->spath);
	pthread_mutex_destroy(&fh->lock);
	free(fh);
}
