/*
 * hlo_dump.c - the HLO reader's programs as JSON, for the Python oracle
 * (tests/hlo/oracle_hlo.py) and bench/hlo.sh.
 *
 *   hlo-dump --sidecar FILE...   each "<module>(<id>).hlo_proto.pb" file
 *   hlo-dump --xspace FILE       the "/host:metadata" plane's HloProtos
 *   hlo-dump --raw FILE...       each file as one HloProto (program id 0)
 *   --summary                    counts only (no instructions), and the time
 *   --cost                       each instruction's "cost" (xprofs_hlo_cost_get():
 *                                null for an unknown figure); with --summary
 *                                the cost of every instruction is taken and
 *                                only its time and totals printed
 *   --facts-max BYTES            also "facts": the facts table of the index
 *                                built with that cap (0: the default):
 *                                {count, truncated, bytes}
 *
 * Prints {"programs": [{module, program_id, source, error, errno, name, id,
 * entry, computations: [{name, id, root, is_fusion, instructions: [...]}]}]}
 * with every field the reader gives; a program that fails has "error" and
 * "errno" set and no computations. Files are read through pread (no
 * mapping), as the daemon reads them.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xprofs/hlo.h"
#include "xprofs/xspace.h"

struct file {
	int fd;
	struct xprofs_reader r;
};

static ssize_t fd_pread(void *arg, void *buf, size_t n, uint64_t off)
{
	ssize_t got = xprofs_pread_full(*(int *)arg, buf, n, off);

	return got;
}

static int file_open(const char *path, struct file *f)
{
	struct stat st;

	memset(f, 0, sizeof(*f));
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0 || fstat(f->fd, &st) < 0) {
		fprintf(stderr, "hlo-dump: %s: %s\n", path, strerror(errno));
		return -1;
	}
	f->r.pread = fd_pread;
	f->r.arg = &f->fd;
	f->r.size = (uint64_t)st.st_size;
	return 0;
}

static json_t *i64s(const int64_t *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_integer(v[i]));
	return a;
}

static json_t *shape_json(const struct xprofs_hlo_program *p, size_t id)
{
	struct xprofs_hlo_shape s;
	json_t *o, *t;

	if (xprofs_hlo_shape_get(p, id, &s) < 0)
		return json_null();
	t = json_array();
	for (size_t i = 0; i < s.n_tuple; i++)
		json_array_append_new(t, shape_json(p, s.tuple[i]));
	o = json_pack("{s:i, s:o, s:o, s:I}", "type", s.element_type, "dims", i64s(s.dims, s.rank),
		      "tuple", t, "elements", (json_int_t)s.elements);
	return o;
}

/* --cost */
static bool with_cost;

static json_t *known(const struct xprofs_hlo_cost *c, unsigned bit, double v)
{
	return c->known & bit ? json_real(v) : json_null();
}

static json_t *cost_json(const struct xprofs_hlo_program *p, size_t i)
{
	struct xprofs_hlo_cost c;

	if (xprofs_hlo_cost_get(p, i, &c) < 0)
		return json_null();
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:s?}", "flops",
			 known(&c, XPROFS_HLO_COST_FLOPS, c.flops), "transcendentals",
			 known(&c, XPROFS_HLO_COST_TRANSCENDENTALS, c.transcendentals), "bytes",
			 known(&c, XPROFS_HLO_COST_BYTES, c.bytes_accessed), "read",
			 known(&c, XPROFS_HLO_COST_RW, c.bytes_read), "written",
			 known(&c, XPROFS_HLO_COST_RW, c.bytes_written), "reason", c.reason);
}

/* --summary --cost: every instruction's cost, timed; totals of the known figures. */
static void cost_summary(const struct xprofs_hlo_program *p, size_t n, json_t *o)
{
	double flops = 0, bytes = 0;
	size_t unknown = 0;
	int64_t t0 = xprofs_mono_ns();

	for (size_t i = 0; i < n; i++) {
		struct xprofs_hlo_cost c;

		if (xprofs_hlo_cost_get(p, i, &c) < 0)
			continue;
		flops += c.flops;
		bytes += c.bytes_accessed;
		unknown += c.known != XPROFS_HLO_COST_ALL;
	}
	json_object_set_new(o, "cost_seconds", json_real((double)(xprofs_mono_ns() - t0) / 1e9));
	json_object_set_new(o, "cost_flops", json_real(flops));
	json_object_set_new(o, "cost_bytes", json_real(bytes));
	json_object_set_new(o, "cost_unknown", json_integer((json_int_t)unknown));
}

static json_t *instr_json(const struct xprofs_hlo_program *p, size_t i)
{
	struct xprofs_hlo_instr in;
	struct xprofs_hlo_computation c;
	struct xprofs_buf bc;
	json_t *o, *a;

	if (xprofs_hlo_instr_get(p, i, &in) < 0)
		return json_null();
	o = json_pack("{s:I, s:s, s:s, s:o, s:s, s:s, s:s, s:i, s:s, s:s, s:I, s:I, s:o, s:I, s:I}",
		      "id", (json_int_t)in.id, "name", in.name, "opcode", in.opcode, "shape",
		      shape_json(p, in.shape), "op_name", in.op_name, "op_type", in.op_type,
		      "source_file", in.source_file, "source_line", in.source_line,
		      "custom_call_target", in.custom_call_target, "fusion_kind", in.fusion_kind,
		      "parameter_number", (json_int_t)in.parameter_number, "tuple_index",
		      (json_int_t)in.tuple_index, "dimensions",
		      i64s(in.dimensions, in.n_dimensions), "feature_group_count",
		      (json_int_t)in.feature_group_count, "batch_group_count",
		      (json_int_t)in.batch_group_count);
	json_object_set_new(o, "category", json_string(xprofs_hlo_category(p, i)));
	a = json_array();
	for (size_t k = 0; k < in.n_operands; k++) {
		struct xprofs_hlo_instr op;

		xprofs_hlo_instr_get(p, in.operands[k], &op);
		json_array_append_new(a, json_integer(op.id));
	}
	json_object_set_new(o, "operands", a);
	a = json_array();
	for (size_t k = 0; k < in.n_called; k++) {
		xprofs_hlo_computation_get(p, in.called[k], &c);
		json_array_append_new(a, json_integer(c.id));
	}
	json_object_set_new(o, "called", a);
	a = json_array();
	for (size_t k = 0; k < in.n_window; k++) {
		const struct xprofs_hlo_window_dim *w = &in.window[k];

		json_array_append_new(a, json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:b}", "size",
						   (json_int_t)w->size, "stride",
						   (json_int_t)w->stride, "padding_low",
						   (json_int_t)w->padding_low, "padding_high",
						   (json_int_t)w->padding_high, "window_dilation",
						   (json_int_t)w->window_dilation, "base_dilation",
						   (json_int_t)w->base_dilation, "window_reversal",
						   w->window_reversal));
	}
	json_object_set_new(o, "window", a);
	if (in.has_conv)
		json_object_set_new(
			o, "conv",
			json_pack("{s:I, s:I, s:o, s:I, s:I, s:o, s:I, s:I, s:o}", "input_batch",
				  (json_int_t)in.conv.input_batch, "input_feature",
				  (json_int_t)in.conv.input_feature, "input_spatial",
				  i64s(in.conv.input_spatial, in.conv.n_input_spatial),
				  "kernel_input_feature", (json_int_t)in.conv.kernel_input_feature,
				  "kernel_output_feature",
				  (json_int_t)in.conv.kernel_output_feature, "kernel_spatial",
				  i64s(in.conv.kernel_spatial, in.conv.n_kernel_spatial),
				  "output_batch", (json_int_t)in.conv.output_batch,
				  "output_feature", (json_int_t)in.conv.output_feature,
				  "output_spatial",
				  i64s(in.conv.output_spatial, in.conv.n_output_spatial)));
	else
		json_object_set_new(o, "conv", json_null());
	if (in.has_dot)
		json_object_set_new(
			o, "dot",
			json_pack("{s:o, s:o, s:o, s:o}", "lhs_contracting",
				  i64s(in.dot.lhs_contracting, in.dot.n_lhs_contracting),
				  "rhs_contracting",
				  i64s(in.dot.rhs_contracting, in.dot.n_rhs_contracting),
				  "lhs_batch", i64s(in.dot.lhs_batch, in.dot.n_lhs_batch),
				  "rhs_batch", i64s(in.dot.rhs_batch, in.dot.n_rhs_batch)));
	else
		json_object_set_new(o, "dot", json_null());
	xprofs_buf_init(&bc, (size_t)1 << 30);
	if (xprofs_hlo_backend_config(p, i, &bc) == 0)
		json_object_set_new(o, "backend_config",
				    json_stringn_nocheck(bc.data ? bc.data : "", bc.len));
	else
		json_object_set_new(o, "backend_config", json_null());
	xprofs_buf_deinit(&bc);
	/* the look-up by name finds the first instruction of that name */
	json_object_set_new(o, "found",
			    json_integer(xprofs_hlo_find_instr(p, in.name, strlen(in.name))));
	if (with_cost)
		json_object_set_new(o, "cost", cost_json(p, i));
	return o;
}

static json_t *program_json(const struct xprofs_hlo_program_info *pi,
			    const struct xprofs_hlo_program *p, int rc, const char *err,
			    bool summary, double secs)
{
	static const char *const src[] = {"sidecar", "metadata", "range"};
	struct xprofs_hlo_module m;
	json_t *o, *comps;

	o = json_pack("{s:s, s:I, s:s, s:I, s:I}", "module", pi->module, "program_id",
		      (json_int_t)pi->program_id, "source", src[pi->source], "offset",
		      (json_int_t)pi->off, "length", (json_int_t)pi->len);
	if (rc < 0) {
		json_object_set_new(o, "error", json_string(err));
		json_object_set_new(o, "errno", json_integer(-rc));
		return o;
	}
	xprofs_hlo_program_module(p, &m);
	json_object_set_new(o, "error", json_null());
	json_object_set_new(o, "name", json_string(m.name));
	json_object_set_new(o, "id", json_integer(m.id));
	json_object_set_new(o, "entry", json_integer(m.entry));
	json_object_set_new(o, "entry_computation_name", json_string(m.entry_computation_name));
	json_object_set_new(o, "n_computations", json_integer((json_int_t)m.n_computations));
	json_object_set_new(o, "n_instructions", json_integer((json_int_t)m.n_instructions));
	json_object_set_new(o, "n_shapes", json_integer((json_int_t)m.n_shapes));
	json_object_set_new(o, "bytes", json_integer((json_int_t)m.bytes));
	json_object_set_new(o, "seconds", json_real(secs));
	if (summary) {
		if (with_cost)
			cost_summary(p, m.n_instructions, o);
		return o;
	}
	comps = json_array();
	for (size_t i = 0; i < m.n_computations; i++) {
		struct xprofs_hlo_computation c;
		json_t *co, *ins = json_array();

		xprofs_hlo_computation_get(p, i, &c);
		for (size_t k = c.first; k < c.first + c.n; k++)
			json_array_append_new(ins, instr_json(p, k));
		co = json_pack("{s:s, s:I, s:I, s:b, s:o}", "name", c.name, "id", (json_int_t)c.id,
			       "root", (json_int_t)c.root, "is_fusion", c.is_fusion, "instructions",
			       ins);
		json_array_append_new(comps, co);
	}
	json_object_set_new(o, "computations", comps);
	return o;
}

int main(int argc, char **argv)
{
	struct xprofs_hlo_index *idx = NULL;
	struct xprofs_xspace *x = NULL;
	struct file files[256];
	size_t n_files = 0;
	bool summary = false;
	long facts_max = -1;
	const char *mode = NULL;
	json_t *progs = json_array(), *top;
	struct xprofs_buf err;
	int ret = 1;

	xprofs_buf_init(&err, 4096);
	if (xprofs_hlo_index_new(&idx) < 0)
		return 1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--summary")) {
			summary = true;
		} else if (!strcmp(argv[i], "--cost")) {
			with_cost = true;
		} else if (!strcmp(argv[i], "--facts-max") && i + 1 < argc) {
			facts_max = strtol(argv[++i], NULL, 10);
		} else if (!strncmp(argv[i], "--", 2)) {
			mode = argv[i];
		} else if (mode && n_files < 256) {
			const char *base = strrchr(argv[i], '/');
			struct file *f = &files[n_files];
			int r = 0;

			if (file_open(argv[i], f) < 0)
				goto out;
			n_files++;
			base = base ? base + 1 : argv[i];
			xprofs_buf_reset(&err);
			if (!strcmp(mode, "--sidecar")) {
				r = xprofs_hlo_index_add_sidecar(idx, base, &f->r, &err);
			} else if (!strcmp(mode, "--raw")) {
				r = xprofs_hlo_index_add(idx, &f->r, 0, f->r.size, 0, base,
							 XPROFS_HLO_RANGE, &err);
			} else if (!strcmp(mode, "--xspace") && !x) {
				ssize_t k;

				if ((r = xprofs_xspace_open(&f->r, &err, &x)) == 0 &&
				    (k = xprofs_hlo_index_add_xspace(idx, x, &err)) < 0)
					r = (int)k;
			} else {
				fprintf(stderr, "hlo-dump: bad mode %s\n", mode);
				goto out;
			}
			if (r < 0) {
				fprintf(stderr, "hlo-dump: %s: %s (%s)\n", argv[i], err.data,
					strerror(-r));
				goto out;
			}
		} else {
			fprintf(stderr, "usage: hlo-dump [--summary] [--cost] "
					"--sidecar|--xspace|--raw FILE...\n");
			return 2;
		}
	}
	for (size_t i = 0; i < xprofs_hlo_index_count(idx); i++) {
		struct xprofs_hlo_program_info pi;
		struct xprofs_hlo_program *p = NULL;
		int64_t t0 = xprofs_mono_ns();
		int r;

		xprofs_hlo_index_get(idx, i, &pi);
		xprofs_buf_reset(&err);
		r = xprofs_hlo_program_load(idx, i, &err, &p);
		json_array_append_new(progs,
				      program_json(&pi, p, r, err.data ? err.data : "", summary,
						   (double)(xprofs_mono_ns() - t0) / 1e9));
		xprofs_hlo_program_free(p);
	}
	top = json_pack("{s:o}", "programs", progs);
	progs = NULL;
	if (facts_max >= 0) {
		struct xprofs_hlo_facts_opts fo = {.mem_max = (size_t)facts_max};
		struct xprofs_hlo_facts *f = NULL;

		if (xprofs_hlo_facts_build(idx, &fo, &f) < 0) {
			json_decref(top);
			goto out;
		}
		json_object_set_new(top, "facts",
				    json_pack("{s:I, s:b, s:I}", "count",
					      (json_int_t)xprofs_hlo_facts_count(f), "truncated",
					      xprofs_hlo_facts_truncated(f), "bytes",
					      (json_int_t)xprofs_hlo_facts_bytes(f)));
		xprofs_hlo_facts_free(f);
	}
	json_dumpf(top, stdout, JSON_COMPACT);
	putchar('\n');
	json_decref(top);
	ret = 0;
out:
	json_decref(progs);
	xprofs_hlo_index_free(idx);
	xprofs_xspace_free(x);
	for (size_t i = 0; i < n_files; i++)
		close(files[i].fd);
	xprofs_buf_deinit(&err);
	return ret;
}
