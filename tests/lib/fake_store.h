/*
 * tests/lib/fake_store.h - an in-memory store for tests: a fixed list of
 * paths (directories end in '/'), listed and stat'ed like a real backend.
 * Used by the fs unit tests and the fs-path fuzz target.
 *
 * Limits: stat and list only (no open, no writes); at most
 * FAKE_STORE_MAX_NAMES distinct names per directory, 127 bytes per name.
 * Not thread-safe (the counter is a plain int).
 */
#ifndef XPROFS_TESTS_FAKE_STORE_H
#define XPROFS_TESTS_FAKE_STORE_H

#include "xprofs/store-backend.h"

#define FAKE_STORE_MAX_NAMES 64

struct fake_store {
	struct xprofs_store base; /* first: the store the code under test sees */
	const char *const *paths; /* borrowed; NULL-terminated */
	int lists;                /* list() calls so far */
};

/*
 * fake_store_init() - a store over @paths (borrowed, NULL-terminated; must
 * outlive @fs; may be replaced later through @fs->paths). Every entry has
 * size 100 + strlen(path), mtime 1000 ns and generation 7. Freeing the store
 * (xprofs_store_free(&fs->base)) does nothing: @fs is the caller's.
 */
void fake_store_init(struct fake_store *fs, const char *const *paths);

#endif
