/*
 * tests/gcs/fuzz_list.c - libFuzzer target for the objects.list page parser
 * and the header parsers it shares hostile input with. Each listed item also
 * goes into a tree, so the tree's path handling is fuzzed too.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gcs-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int add_item(void *arg, const struct gcs_item *it)
{
	struct gcs_tree *t = arg;
	struct xprofs_store_stat st = {
		.type = XPROFS_STORE_FILE, .size = it->size, .generation = it->generation};
	char path[GCS_NAME_MAX + 1];

	memcpy(path, it->name, it->name_len);
	path[it->name_len] = '\0';
	if (xprofs_store_path_valid(path))
		(void)!gcs_tree_add_file(t, path, &st);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gcs_tree *t = NULL;
	char *tok = NULL, *s;
	unsigned skipped;
	uint64_t a, b, c;
	char msg[128];

	if (gcs_tree_new(&t) < 0)
		return 0;
	if (gcs_list_parse((const char *)data, size, add_item, t, &tok, &skipped) == 0)
		free(tok);
	gcs_tree_free(t);
	gcs_error_message((const char *)data, size, msg, sizeof(msg));
	s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	(void)!gcs_content_range_parse(s, &a, &b, &c);
	(void)!gcs_range_parse(s, &a);
	free(s);
	return 0;
}
