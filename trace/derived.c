/*
 * derived.c - the lines XProf derives on GPU planes from the annotations of
 * kernels ("XLA Modules", "XLA Ops", "Framework Name Scope", "Framework
 * Ops", "Source code"), and the GPU line order (display ids) that goes with
 * them, for trace.json and any view sharing the trace model.
 *
 * Sources (openxla/xprof xprof/utils/derived_timeline.cc):
 * DeriveEventsFromAnnotations() (per GPU plane: the non-derived lines sorted
 * compute streams first, then by event count; each stream k gets its own
 * derived lines with ids kThreadIdDeviceDerivedMin + 6k + offset and names
 * "<line> - from #<stream id>"; display ids renumbered 1, 2, ... in that
 * order), DeriveEventsFromAnnotationsForLines() (per kernel: hlo_module,
 * hlo_op and, through the symbol resolver of GenerateDerivedTimeLines()
 * (hlo-syms.c), the XLA instruction's framework op and source line),
 * HloModuleEventName() / HloOpEventPrefix(),
 * DerivedXLineBuilder::ExpandOrAddLevelEvent() / ExpandOrAddEvents() /
 * ResetLastEvents() / AdjustDurationForTraceViewer() (the merging);
 * GpuEventStats (IsKernel: kernel_details set; IsXlaOp: hlo_op set, split at
 * "::"; IsTfOp: tf_op non-empty), ProcessTfOpEvent() (a framework op: name
 * scopes for TensorFlow and JAX ops, the op itself shown by its
 * TfOpEventName()); TSL tf_op_utils.cc ParseTfOpFullname(), ParseTfNameScopes(),
 * TfOpEventName(), whose regular expressions are matched by hand here.
 * Constants from TSL trace_utils.h and xplane_schema.cc.
 *
 * Design: derivation streams with the render of the stream line: each event
 * of the line is fed in file order, and each derived line keeps one open
 * event per nesting level (at most DER_LEVELS); an event goes out through
 * the caller's emit function when XProf's builder would stop changing it.
 * Memory: five derived lines of DER_LEVELS events, names (and the tf_op
 * string parsed) capped at DER_NAME_MAX bytes; nothing grows with the
 * profile (the render's symbol table is bounded in hlo-syms.c) but a TPU
 * plane's host-offload starts waiting for their dones (at most
 * OFF_PENDING_MAX, OFF_BYTES_MAX bytes of keys and shapes).
 *
 * Limits (docs/trace.md lists them): name scopes deeper than DER_LEVELS are
 * dropped; scope_range_id and CUDA-graph stats are not used; a line the
 * plane already holds by name is not derived again.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "derived.h"

/*
 * The derived lines' display ids follow the stream's, in id order: Framework
 * Name Scope +1, Framework Ops +2, XLA Modules +3, XLA Ops +4, Source code +5.
 */
static const uint32_t tid_offset[DL_COUNT + 1] = {
	[DL_NAME_SCOPE] = 1, [DL_TF_OP] = 2, [DL_MODULE] = 3, [DL_HLO_OP] = 4, [DL_SOURCE] = 5};
/*
 * A TensorCore plane's derived lines keep their line ids (no display id):
 * kThreadIdTfNameScope, kThreadIdTfOp and kThreadIdSource, from kThreadIdDerivedMin.
 */
static const uint32_t tpu_tid_offset[DL_COUNT + 1] = {
	[DL_NAME_SCOPE] = 2, [DL_TF_OP] = 3, [DL_SOURCE] = 7};

/* ---- merging (DerivedXLineBuilder) ----------------------------------------- */

static void lv_close(struct trace_derive *d, struct der_line *dl, int level)
{
	struct der_ev *v = &dl->lv[level];

	if (!v->open)
		return;
	v->open = false;
	if (d->r < 0)
		return;
	if (d->win && !(v->begin < d->to && (v->end > v->begin ? v->end : v->begin + 1) > d->from))
		return; /* a slice keeps what overlaps its window */
	if (d->dry) {
		if (v->unsure)
			d->inexact = true;
		return;
	}
	{
		struct trace_derived_ev e = {
			.kind = dl->kind,
			.tid = d->tid0 + (d->tpu ? tpu_tid_offset : tid_offset)[dl->kind],
			.line_name = dl->title.data,
			.line_name_len = dl->title.len,
			.name = v->name.data ? v->name.data : "",
			.name_len = v->name.len,
			.disp = v->disp.data ? v->disp.data : "",
			.disp_len = v->disp.len,
			.has_group = v->has_group,
			.group = v->group,
			.begin = v->begin,
			.end = v->end,
		};
		int r = d->emit(d->arg, &e);

		if (r < 0)
			d->r = r;
	}
}

/* AdjustDurationForTraceViewer(): equal spans of a stack shrink by 1 ns per level. */
static void adjust(struct der_line *dl, int level)
{
	int top = level;
	int64_t max_shrink, shrink = 0;
	xs_ps128 lb = 0, le = 0;
	bool have = false;

	bool unsure = false;

	if (level >= DER_LEVELS || !dl->lv[level].open)
		return;
	while (top < DER_LEVELS && dl->lv[top].open)
		unsure |= dl->lv[top++].unsure;
	top--;
	if (top <= level)
		return;
	if (unsure) /* equal spans decide the shrink: one unsure span makes the stack unsure */
		for (int i = level; i <= top; i++)
			dl->lv[i].unsure = true;
	max_shrink = (int64_t)((dl->lv[top].end - dl->lv[top].begin) / 1000) - 1;
	for (int i = level; i <= top; i++) {
		struct der_ev *v = &dl->lv[i];

		if (shrink < max_shrink && have && lb == v->begin && le == v->end)
			shrink++;
		lb = v->begin, le = v->end, have = true;
		if (shrink) {
			v->end -= (xs_ps128)shrink * 1000;
			if (v->end < v->begin)
				v->end = v->begin;
		}
	}
}

/*
 * ResetLastEvents(): close @level and deeper; level 0 also resets the
 * dependent lines. In a lookback walk (see trace_derive_tpu()) a @sure reset
 * is one the whole walk makes too, so those levels are empty in both after
 * it; an unsure one (the whole walk may have expanded instead) leaves the
 * whole walk's state there unknown.
 */
static void reset_as(struct trace_derive *d, struct der_line *dl, int level, bool sure)
{
	adjust(dl, level);
	for (int i = level; i < DER_LEVELS; i++) {
		lv_close(d, dl, i);
		dl->fresh[i] = d->lookback && !sure;
	}
	if (level == 0)
		for (int k = 0; k < DL_COUNT; k++)
			if (dl->deps & (1u << k))
				reset_as(d, &d->lines[k], 0, sure);
}

static void reset(struct trace_derive *d, struct der_line *dl, int level)
{
	reset_as(d, dl, level, true);
}

static int set_str(struct xprofs_buf *b, const char *s, size_t n)
{
	xprofs_buf_reset(b);
	if (n > DER_NAME_MAX)
		n = DER_NAME_MAX;
	return n ? xprofs_buf_add(b, s, n) : 0;
}

/*
 * ExpandOrAddLevelEvent(): an equal name and group_id expand the open event;
 * on other than GPU planes (d->tpu) an event without a group_id expands it
 * only when it starts within twice the open event's duration after its end.
 */
static int expand_or_add(struct trace_derive *d, struct der_line *dl, int level,
			 const struct xprofs_buf *name, const char *disp, size_t disp_len,
			 const struct trace_derived_in *in)
{
	struct der_ev *v;
	int r;

	if (level >= DER_LEVELS)
		return 0;
	v = &dl->lv[level];
	bool same = v->open && v->has_group == in->has_group &&
		    (!in->has_group || v->group == in->group) && v->name.len == name->len &&
		    !memcmp(v->name.data, name->data, name->len);
	if (same && (!d->tpu || in->has_group || v->end + 2 * (v->end - v->begin) >= in->begin)) {
		if (in->begin < v->begin)
			v->begin = in->begin;
		if (in->end > v->end)
			v->end = in->end;
		return 0;
	}
	/*
	 * A lookback walk: a new event where the whole walk's state is unknown,
	 * or one that the gap test made from an unsure event (the whole walk's
	 * copy started earlier, so is longer and may have been expanded), is
	 * unsure, and so is what the whole walk may still hold below it.
	 */
	bool unsure = d->lookback && (dl->fresh[level] || (same && v->unsure));
	reset_as(d, dl, level, !unsure);
	v->unsure = unsure;
	dl->fresh[level] = false; /* both walks now hold an event of this name here */
	if ((r = set_str(&v->name, name->data, name->len)) < 0 ||
	    (r = set_str(&v->disp, disp, disp_len)) < 0)
		return r;
	v->open = true;
	v->has_group = in->has_group;
	v->group = in->group;
	v->begin = in->begin;
	v->end = in->end;
	return 0;
}

/* The "XLA Ops" levels of hlo_op "a::b::c", each named "<prefix>/<op>", shown as "<op>". */
static int hlo_ops(struct trace_derive *d, const struct trace_derived_in *in)
{
	struct der_line *dl = &d->lines[DL_HLO_OP];
	const char *s = in->hlo_op, *end = in->hlo_op + in->hlo_op_len;
	int level = 0, r;

	for (;;) {
		const char *sep = memmem(s, (size_t)(end - s), "::", 2);
		const char *e = sep ? sep : end;

		xprofs_buf_reset(&d->tmp);
		if (in->has_program_id)
			r = xprofs_buf_printf(&d->tmp, "%" PRIu64 "/", in->program_id);
		else if ((r = set_str(&d->tmp, in->module, in->module_len)) == 0)
			r = xprofs_buf_adds(&d->tmp, "/");
		if (r == 0 && (size_t)(e - s) + d->tmp.len <= DER_NAME_MAX)
			r = xprofs_buf_add(&d->tmp, s, (size_t)(e - s));
		if (r < 0)
			return r;
		if ((r = expand_or_add(d, dl, level++, &d->tmp, s, (size_t)(e - s), in)) < 0)
			return r;
		if (!sep)
			break;
		s = sep + 2;
	}
	reset(d, dl, level);
	return 0;
}

/* ---- ProcessTfOpEvent() and TSL's tf_op_utils.cc ------------------------------ */

/* ASCII classes as RE2 reads them (no locale) */
static bool a_lower(char c)
{
	return c >= 'a' && c <= 'z';
}

static bool a_upper(char c)
{
	return c >= 'A' && c <= 'Z';
}

static bool a_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool a_space(char c) /* absl::ascii_isspace() */
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* IsTfOpName(): [A-Za-z0-9.][A-Za-z0-9_.\/>-]* */
static bool tf_op_name_ok(const char *s, size_t n)
{
	if (!n || !(a_lower(s[0]) || a_upper(s[0]) || a_digit(s[0]) || s[0] == '.'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(a_lower(s[i]) || a_upper(s[i]) || a_digit(s[i]) || s[i] == '_' ||
		      s[i] == '.' || s[i] == '/' || s[i] == '>' || s[i] == '-'))
			return false;
	return true;
}

/* IsTfOpType(): [A-Z_][a-zA-Z0-9_]* */
static bool tf_op_type_ok(const char *s, size_t n)
{
	if (!n || !(a_upper(s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(a_lower(s[i]) || a_upper(s[i]) || a_digit(s[i]) || s[i] == '_'))
			return false;
	return true;
}

/* IsJaxOpType(): [a-z_][a-z0-9_]*(\[.*\])? ('.' matches any byte but a newline) */
static bool jax_op_type_ok(const char *s, size_t n)
{
	size_t i = 1;

	if (!n || !(a_lower(s[0]) || s[0] == '_'))
		return false;
	while (i < n && (a_lower(s[i]) || a_digit(s[i]) || s[i] == '_'))
		i++;
	if (i == n)
		return true;
	if (s[i] != '[' || n - i < 2 || s[n - 1] != ']')
		return false;
	return !memchr(s + i + 1, '\n', n - i - 2);
}

/* absl::SimpleAtoi() into an int64: whitespace around, one sign, digits, no overflow. */
static bool is_int64(const char *s, size_t n)
{
	uint64_t v = 0, lim = (uint64_t)INT64_MAX;

	while (n && a_space(s[0]))
		s++, n--;
	while (n && a_space(s[n - 1]))
		n--;
	if (n && (s[0] == '-' || s[0] == '+')) {
		if (s[0] == '-')
			lim++;
		s++, n--;
	}
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!a_digit(s[i]) || v > (lim - (uint64_t)(s[i] - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	return true;
}

/* DeriveOpType(): the last '/' piece without a "_<integer>" suffix. */
static void derive_op_type(const char *s, size_t n, const char **t, size_t *tn)
{
	const char *op = s, *us = NULL;

	for (size_t i = 0; i < n; i++)
		if (s[i] == '/')
			op = s + i + 1;
	n -= (size_t)(op - s);
	for (size_t i = 0; i < n; i++)
		if (op[i] == '_')
			us = op + i;
	*t = op;
	*tn = n;
	if (us && is_int64(us + 1, n - (size_t)(us + 1 - op)))
		*tn = (size_t)(us - op);
}

/* absl::StartsWithIgnoreCase() (ASCII) */
static bool starts_icase(const char *s, size_t n, const char *p)
{
	size_t k = strlen(p);

	if (n < k)
		return false;
	for (size_t i = 0; i < k; i++) {
		char a = s[i], b = p[i];

		if (a_upper(a))
			a = (char)(a - 'A' + 'a');
		if (a_upper(b))
			b = (char)(b - 'A' + 'a');
		if (a != b)
			return false;
	}
	return true;
}

static void tfop_set(struct trace_tfop *op, enum trace_tfop_cat cat, const char *type,
		     size_t type_len)
{
	op->cat = cat;
	op->type = type;
	op->type_len = type_len;
}

void trace_tfop_parse(const char *s, size_t n, struct trace_tfop *op)
{
	static const struct {
		const char *prefix, *type;
		enum trace_tfop_cat cat;
	} memcpys[] = {
		{"MEMCPYHToD", "MemcpyHToD", TFOP_MEMCPY_HTOD},
		{"MEMCPYDToH", "MemcpyDToH", TFOP_MEMCPY_DTOH},
		{"MEMCPYDToD", "MemcpyDToD", TFOP_MEMCPY_DTOD},
		{"MEMCPYHToH", "MemcpyHToH", TFOP_MEMCPY_HTOH},
	};
	const char *colon = memchr(s, ':', n), *p1, *t;
	size_t n0, n1, tn;

	op->name = s;
	op->name_len = n;
	tfop_set(op, TFOP_UNKNOWN, "", 0); /* kUnknownOp */
	if (!colon) {
		/* "<op_name>:<op_type>" or else a GPU memcpy op (GetMemcpyOp()) */
		for (size_t i = 0; i < sizeof(memcpys) / sizeof(memcpys[0]); i++)
			if (starts_icase(s, n, memcpys[i].prefix)) {
				tfop_set(op, memcpys[i].cat, memcpys[i].type,
					 strlen(memcpys[i].type));
				break;
			}
		return;
	}
	n0 = (size_t)(colon - s);
	p1 = colon + 1;
	n1 = n - n0 - 1;
	if (n0 == 8 && !memcmp(s, "Iterator", 8)) { /* kIterator: a tf.data op */
		tfop_set(op, TFOP_TF_DATA, "Dataset", 7);
		return;
	}
	if (tf_op_name_ok(s, n0) && tf_op_type_ok(p1, n1)) {
		op->name_len = n0;
		tfop_set(op, TFOP_TENSORFLOW, p1, n1);
		return;
	}
	t = p1, tn = n1;
	if (!n1)
		derive_op_type(s, n0, &t, &tn);
	if (jax_op_type_ok(t, tn)) {
		const char *br =
			memchr(t, '[', tn); /* "transpose[permutation=...]" -> "transpose" */

		op->name_len = n0;
		tfop_set(op, TFOP_JAX, t, br ? (size_t)(br - t) : tn);
	} else if (!n1) {
		op->name_len = n0;
		tfop_set(op, TFOP_TENSORFLOW, t, tn);
	}
}

int trace_tfop_event_name(const struct trace_tfop *op, struct xprofs_buf *b)
{
	const char *s = op->name, *last = s, *hit;
	size_t n = op->name_len;
	int r;

	xprofs_buf_reset(b);
	switch (op->cat) {
	case TFOP_UNKNOWN: /* the name without trailing whitespace */
		while (n && a_space(s[n - 1]))
			n--;
		return set_str(b, s, n);
	case TFOP_TF_DATA: /* DatasetOpEventName(): "Iterator::" + the last "::" piece */
		while ((hit = memmem(last, n - (size_t)(last - s), "::", 2)) != NULL)
			last = hit + 2;
		n -= (size_t)(last - s);
		if ((r = xprofs_buf_adds(b, "Iterator::")) < 0)
			return r;
		return xprofs_buf_add(b, last, n > DER_NAME_MAX - 10 ? DER_NAME_MAX - 10 : n);
	default:
		return set_str(b, op->type, op->type_len);
	}
}

/* ParseTfNameScopes(): every '/' piece of the op name but the last, one level each. */
static int name_scopes(struct trace_derive *d, const struct trace_tfop *op,
		       const struct trace_derived_in *in)
{
	struct der_line *dl = &d->lines[DL_NAME_SCOPE];
	const char *s = op->name, *end = op->name + op->name_len, *slash;
	int level = 0, r;

	while ((slash = memchr(s, '/', (size_t)(end - s))) != NULL) {
		if (level < DER_LEVELS &&
		    ((r = set_str(&d->tmp, s, (size_t)(slash - s))) < 0 ||
		     (r = expand_or_add(d, dl, level, &d->tmp, NULL, 0, in)) < 0))
			return r;
		level++;
		s = slash + 1;
	}
	if (level) /* ExpandOrAddEvents() of no scope changes nothing */
		reset(d, dl, level);
	return 0;
}

/* ProcessTfOpEvent() of tf_op @s (@n bytes, cut at DER_NAME_MAX) for kernel @in. */
static int tf_op_event(struct trace_derive *d, const char *s, size_t n,
		       const struct trace_derived_in *in)
{
	struct trace_tfop op;
	int r;

	if (n > DER_NAME_MAX)
		n = DER_NAME_MAX;
	trace_tfop_parse(s, n, &op);
	if ((op.cat == TFOP_TENSORFLOW || op.cat == TFOP_JAX) &&
	    !(d->have & (1u << DL_NAME_SCOPE)) && (r = name_scopes(d, &op, in)) < 0)
		return r;
	if (d->have & (1u << DL_TF_OP))
		return 0;
	/* the event is named by the whole tf_op and shown as TfOpEventName() */
	if ((r = trace_tfop_event_name(&op, &d->disp)) < 0 || (r = set_str(&d->tmp, s, n)) < 0)
		return r;
	return expand_or_add(d, &d->lines[DL_TF_OP], 0, &d->tmp, d->disp.data, d->disp.len, in);
}

/*
 * An XLA kernel's symbol (the instruction named by the last "::" part of its
 * hlo_op in program program_id): its framework op through ProcessTfOpEvent(),
 * its source line on Source code.
 */
static int xla_symbol(struct trace_derive *d, const struct trace_derived_in *in)
{
	const char *last = in->hlo_op, *end = in->hlo_op + in->hlo_op_len, *hit;
	struct trace_hlo_sym sym;
	int r;

	if (!d->syms || !in->has_program_id)
		return 0;
	while ((hit = memmem(last, (size_t)(end - last), "::", 2)) != NULL)
		last = hit + 2;
	if (!trace_hlo_syms_find(d->syms, in->program_id, last, (size_t)(end - last), &sym))
		return 0;
	if (sym.tf_op_len && (r = tf_op_event(d, sym.tf_op, sym.tf_op_len, in)) < 0)
		return r;
	if (sym.source_len && !(d->have & (1u << DL_SOURCE))) {
		if ((r = set_str(&d->tmp, sym.source, sym.source_len)) < 0)
			return r;
		return expand_or_add(d, &d->lines[DL_SOURCE], 0, &d->tmp, NULL, 0, in);
	}
	return 0;
}

int trace_derive_event(struct trace_derive *d, const struct trace_derived_in *in)
{
	int r;

	if (!in->is_kernel) /* memcpy and other stream events derive nothing */
		return d->r;
	if (in->module_len && !(d->have & (1u << DL_MODULE))) {
		/* HloModuleEventName(): "<module>(<program_id>)" */
		if ((r = set_str(&d->tmp, in->module, in->module_len)) < 0 ||
		    (in->has_program_id &&
		     (r = xprofs_buf_printf(&d->tmp, "(%" PRIu64 ")", in->program_id)) < 0) ||
		    (r = expand_or_add(d, &d->lines[DL_MODULE], 0, &d->tmp, NULL, 0, in)) < 0)
			return r;
	}
	if (in->has_hlo_op) {
		if (!(d->have & (1u << DL_HLO_OP)) && (r = hlo_ops(d, in)) < 0)
			return r;
		if ((r = xla_symbol(d, in)) < 0)
			return r;
	} else if (in->tf_op_len && (r = tf_op_event(d, in->tf_op, in->tf_op_len, in)) < 0) {
		return r; /* IsTfOp(): a framework kernel */
	}
	return d->r;
}

/* ---- a stream's derivation ------------------------------------------------- */

/* The render context's HLO symbols (rc->view_data) go with it. */
static void syms_free(void *syms)
{
	trace_hlo_syms_free(syms);
}

int trace_derive_new(struct xs_rctx *rc, const struct xs_plane *p, const struct xs_line *l,
		     trace_derived_emit_fn emit, void *arg, struct trace_derive **out)
{
	struct trace_derive *d;
	int r = 0;

	*out = NULL;
	if (l->derive_slot < 0 || (p->derived_have & DL_ALL) == DL_ALL)
		return 0;
	if (!rc->view_data_loaded) {
		struct trace_hlo_syms *syms = NULL;

		rc->view_data_loaded = true;
		r = trace_hlo_syms_load(rc->x, &syms);
		rc->view_data = syms;
		rc->view_data_free = syms_free;
		if (r < 0)
			return r;
	}
	if (!(d = calloc(1, sizeof(*d))))
		return -ENOMEM;
	d->emit = emit;
	d->arg = arg;
	d->tid0 = l->trace_tid;
	d->have = p->derived_have;
	d->syms = rc->view_data;
	xprofs_buf_init(&d->tmp, 2 * DER_NAME_MAX + 64);
	xprofs_buf_init(&d->s_op, DER_NAME_MAX + 1);
	xprofs_buf_init(&d->s_mod, DER_NAME_MAX + 1);
	xprofs_buf_init(&d->s_tf, DER_NAME_MAX + 1);
	xprofs_buf_init(&d->disp, DER_NAME_MAX + 1);
	for (int k = 0; k < DL_COUNT; k++) {
		struct der_line *dl = &d->lines[k];

		dl->kind = k;
		xprofs_buf_init(&dl->title, XS_NAME_MAX + 64);
		for (int i = 0; i < DER_LEVELS; i++) {
			xprofs_buf_init(&dl->lv[i].name, DER_NAME_MAX + 1);
			xprofs_buf_init(&dl->lv[i].disp, DER_NAME_MAX + 1);
		}
		/* GetDerivedLineName(): "<name> - from #<stream line id>" */
		if (xs_derived_names[k] && r == 0)
			r = xprofs_buf_printf(&dl->title, "%s - from #%" PRId64,
					      xs_derived_names[k], l->id);
	}
	/* dependents: a new module closes the open name scopes and XLA ops, a new scope the op */
	d->lines[DL_MODULE].deps = 1u << DL_NAME_SCOPE | 1u << DL_HLO_OP;
	d->lines[DL_NAME_SCOPE].deps = 1u << DL_TF_OP;
	if (r < 0) {
		trace_derive_free(d);
		return r;
	}
	*out = d;
	return 0;
}

void trace_derive_window(struct trace_derive *d, xs_ps128 from, xs_ps128 to)
{
	d->win = true;
	d->from = from;
	d->to = to;
}

int trace_derive_finish(struct trace_derive *d)
{
	/* XProf does not reset the builders at the end: no duration adjustment here */
	for (int k = 0; k < DL_COUNT; k++)
		for (int i = 0; i < DER_LEVELS; i++)
			lv_close(d, &d->lines[k], i);
	return d->r;
}

static void offload_free(struct der_offload *o);

void trace_derive_free(struct trace_derive *d)
{
	if (!d)
		return;
	xprofs_buf_deinit(&d->tmp);
	xprofs_buf_deinit(&d->s_op);
	xprofs_buf_deinit(&d->s_mod);
	xprofs_buf_deinit(&d->s_tf);
	xprofs_buf_deinit(&d->disp);
	offload_free(d->off);
	for (int k = 0; k < DL_COUNT; k++) {
		xprofs_buf_deinit(&d->lines[k].title);
		for (int i = 0; i < DER_LEVELS; i++) {
			xprofs_buf_deinit(&d->lines[k].lv[i].name);
			xprofs_buf_deinit(&d->lines[k].lv[i].disp);
		}
	}
	free(d);
}

/* ---- the annotations of an event (GpuEventStats) ------------------------- */

/* The string of stat @s (str or ref; compressed or other kinds: none) into @b. */
static int stat_str(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s,
		    struct xprofs_buf *b, bool *has)
{
	const struct xs_stmd *ref;
	const uint8_t *p;
	size_t n;
	int r;

	if (s->kind == SV_REF) {
		if ((r = xs_md_stat(rc, (int64_t)s->u, &ref)) < 0)
			return r;
		*has = true;
		return set_str(b, ref->name, ref->name_len);
	}
	if (s->kind != SV_STR)
		return 0;
	n = s->len > DER_NAME_MAX ? DER_NAME_MAX : (size_t)s->len;
	if ((r = wire_at(c, s->off, n, &p)) < 0)
		return r;
	*has = true;
	return set_str(b, (const char *)p, n);
}

/* A xs_stat_fn filling struct trace_derived_in (arg) from one event stat. */
static int read_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg)
{
	struct trace_derived_in *in = arg;
	struct trace_derive *d = in->d;
	const struct xs_stmd *m;
	bool is_int = s->kind == SV_U64 || s->kind == SV_I64, has = false;
	int r;

	if ((r = xs_md_stat(rc, s->md, &m)) < 0)
		return r;
	if (xs_str_eq(m->name, m->name_len, "kernel_details")) {
		/* IsKernel(): a non-empty kernel_details string */
		if (s->kind == SV_REF) {
			const struct xs_stmd *ref;

			if ((r = xs_md_stat(rc, (int64_t)s->u, &ref)) < 0)
				return r;
			in->is_kernel = ref->name_len > 0;
		} else {
			in->is_kernel = s->kind == SV_STR && s->len > 0;
		}
	} else if (xs_str_eq(m->name, m->name_len, "hlo_op")) {
		if ((r = stat_str(rc, c, s, &d->s_op, &in->has_hlo_op)) < 0)
			return r;
	} else if (xs_str_eq(m->name, m->name_len, "tf_op")) {
		if ((r = stat_str(rc, c, s, &d->s_tf, &has)) < 0)
			return r;
	} else if (xs_str_eq(m->name, m->name_len, "hlo_module")) {
		if ((r = stat_str(rc, c, s, &d->s_mod, &has)) < 0)
			return r;
	} else if (is_int && xs_str_eq(m->name, m->name_len, "program_id")) {
		in->program_id = s->u;
		in->has_program_id = true;
	} else if (is_int && xs_str_eq(m->name, m->name_len, "group_id")) {
		in->group = (int64_t)s->u;
		in->has_group = true;
	}
	return 0;
}

int trace_derive_read(struct trace_derive *d, struct xs_rctx *rc, const struct xs_event *e,
		      xs_ps128 begin, struct trace_derived_in *in)
{
	int r;

	memset(in, 0, sizeof(*in));
	in->d = d;
	xprofs_buf_reset(&d->s_op);
	xprofs_buf_reset(&d->s_mod);
	xprofs_buf_reset(&d->s_tf);
	if (e->has_stats &&
	    (r = xs_walk_stats(rc, &rc->ev, e->stats_off, e->off + e->len - e->stats_off,
			       XEVENT_F_STATS, read_stat, in)) < 0)
		return r;
	in->hlo_op = d->s_op.data ? d->s_op.data : "";
	in->hlo_op_len = d->s_op.len;
	in->module = d->s_mod.data ? d->s_mod.data : "";
	in->module_len = d->s_mod.len;
	in->tf_op = d->s_tf.data ? d->s_tf.data : "";
	in->tf_op_len = d->s_tf.len;
	in->begin = begin;
	in->end = begin + (e->duration_ps > 0 ? e->duration_ps : 0);
	return 0;
}

/* ---- Steps from group_id (DeriveStepEventsFromGroups) ----------------------- */

/* One line of the plane in the time-ordered merge: its own cursor and next event. */
struct step_src {
	struct wire_cur c;
	uint64_t end;
	xs_ps128 base_ps; /* 128 bits: epoch line timestamps (1.7e18 ns) overflow int64 ps */
	bool has;         /* ev holds the line's next event */
	struct xs_event ev;
};

/* The next event of @s into s->ev (s->has false at the end). */
static int step_next(struct step_src *s)
{
	struct xs_evhdr h;
	const uint8_t *p;
	uint64_t len;
	int r;

	s->has = false;
	if ((r = wire_next_len_field(&s->c, s->end, "XLine", XLINE_F_EVENTS, &len)) <= 0)
		return r;
	if ((r = wire_at(&s->c, s->c.pos, (size_t)len, &p)) < 0)
		return r;
	if (xs_parse_event(p, p + len, &h) < 0)
		return wire_fail(&s->c, "malformed XEvent at offset %" PRIu64, s->c.pos);
	s->ev.off = s->c.pos;
	s->ev.len = len;
	s->ev.md = h.md;
	s->ev.offset_ps = h.offset_ps;
	s->ev.duration_ps = h.duration_ps;
	s->ev.has_stats = h.has_stats;
	s->ev.stats_off = s->ev.off + h.stats_at;
	s->c.pos += len;
	s->has = true;
	return 1;
}

/* The last checkpoint of line @l before which every event ends by @t (absolute ps): its offset. */
static uint64_t line_seek(const struct xs_line *l, xs_ps128 t)
{
	xs_ps128 rel = t - (xs_ps128)l->timestamp_ns * 1000;
	size_t lo = 0, hi = l->n_ckpt;

	while (lo < hi) { /* as win_seek(): max_end is a running maximum */
		size_t mid = lo + (hi - lo) / 2;

		if (l->ckpt[mid].max_end < INT64_MAX && l->ckpt[mid].max_end <= rel)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? l->ckpt[lo - 1].off : l->msg.off;
}

/*
 * A merge of a plane's lines by time: a cursor on each line of @p with
 * events, in @src (room for all of them), at its first event or, with
 * @seek, at line_seek(@from); *@k counts the cursors opened (close them
 * with merge_close(), also on failure).
 */
static int merge_open(struct xs_rctx *rc, const struct xs_plane *p, struct step_src *src, size_t *k,
		      bool seek, xs_ps128 from)
{
	int r;

	*k = 0;
	for (size_t j = 0; j < p->n_lines; j++) {
		const struct xs_line *l = &rc->x->lines[p->first_line + j];
		struct step_src *c = &src[*k];

		if (!l->msg.len)
			continue;
		wire_cur_init(&c->c, rc->x->r, rc->err);
		(*k)++;
		c->c.pos = seek ? line_seek(l, from) : l->msg.off;
		c->c.end = c->end = l->msg.off + l->msg.len;
		c->base_ps = (xs_ps128)l->timestamp_ns * 1000;
		if ((r = step_next(c)) < 0)
			return r;
	}
	return 0;
}

/*
 * The cursor of @src (@n) whose next event comes first, by start then
 * longer first (GetSortedEvents()' order), with that start in *@start;
 * NULL when every line is done.
 */
static struct step_src *merge_next(struct step_src *src, size_t n, xs_ps128 *start)
{
	struct step_src *best = NULL;

	for (size_t i = 0; i < n; i++) {
		xs_ps128 st;

		if (!src[i].has)
			continue;
		st = src[i].base_ps + src[i].ev.offset_ps;
		if (!best || st < *start ||
		    (st == *start && src[i].ev.duration_ps > best->ev.duration_ps)) {
			best = &src[i];
			*start = st;
		}
	}
	return best;
}

static void merge_close(struct step_src *src, size_t k)
{
	for (size_t i = 0; i < k; i++)
		wire_cur_deinit(&src[i].c);
}

/* A xs_stat_fn: an integer group_id stat of an event (arg: struct trace_derived_in). */
static int group_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg)
{
	struct trace_derived_in *in = arg;
	const struct xs_stmd *m;
	int r;

	(void)c;
	if (s->kind != SV_U64 && s->kind != SV_I64)
		return 0;
	if ((r = xs_md_stat(rc, s->md, &m)) < 0)
		return r;
	if (xs_str_eq(m->name, m->name_len, "group_id")) {
		in->group = (int64_t)s->u;
		in->has_group = true;
	}
	return 0;
}

/*
 * Whether plane @p derives Steps: GPU, no Steps line, a group_id stat metadata
 * (found by the index, which never reports a malformed entry it only looked at:
 * loading every entry here left its message behind in a render that succeeds).
 */
static bool steps_wanted(struct xs_rctx *rc, const struct xs_plane *p, size_t *n_src)
{
	if (!xs_plane_is_gpu(p) || !p->group_ids)
		return false;
	*n_src = 0;
	for (size_t j = 0; j < p->n_lines; j++) {
		const struct xs_line *l = &rc->x->lines[p->first_line + j];

		if (l->id == TID_DERIVED_MIN || xs_str_eq(l->name, l->name_len, "Steps"))
			return false; /* kThreadIdStepInfo, kStepLineName: the profile has them */
		if (l->msg.len)
			(*n_src)++;
	}
	return *n_src > 0 && *n_src <= DER_STEP_LINES;
}

/*
 * The merge: events of all lines by (start, longer first), each event's
 * group_id extending or starting the one open Steps event (named after the
 * group; ExpandOrAddEvent() on a GPU plane).
 */
static int steps_merge(struct xs_rctx *rc, struct step_src *src, size_t n, struct trace_derive *d)
{
	struct der_line *dl = &d->lines[0];
	struct trace_derived_in in;
	int r;

	for (;;) {
		xs_ps128 bs = 0;
		struct step_src *best = merge_next(src, n, &bs);

		if (!best)
			return d->r;
		memset(&in, 0, sizeof(in));
		if (best->ev.has_stats &&
		    (r = xs_walk_stats(rc, &best->c, best->ev.stats_off,
				       best->ev.off + best->ev.len - best->ev.stats_off,
				       XEVENT_F_STATS, group_stat, &in)) < 0)
			return r;
		if (in.has_group) {
			in.begin = bs;
			in.end = bs + (best->ev.duration_ps > 0 ? best->ev.duration_ps : 0);
			char num[24];
			size_t nl = 0;

			/* by hand: one per grouped event, and printf showed in profiles */
			if (in.group < 0)
				num[nl++] = '-';
			nl += xs_fmt_u64(num + nl, in.group < 0 ? 0 - (uint64_t)in.group
								: (uint64_t)in.group);
			xprofs_buf_reset(&d->tmp);
			if ((r = xprofs_buf_add(&d->tmp, num, nl)) < 0 ||
			    (r = expand_or_add(d, dl, 0, &d->tmp, NULL, 0, &in)) < 0)
				return r;
		}
		if ((r = step_next(best)) < 0)
			return r;
	}
}

int trace_derive_steps(struct xs_rctx *rc, size_t pi, trace_derived_emit_fn emit, void *arg)
{
	const struct xs_plane *p = &rc->x->planes[pi];
	struct step_src *src = NULL;
	struct trace_derive *d = NULL;
	size_t n = 0, k = 0;
	int r;

	if ((r = xs_plane_enter(rc, pi)) < 0 || !steps_wanted(rc, p, &n))
		return r;
	if (!(d = calloc(1, sizeof(*d))) || !(src = calloc(n, sizeof(*src)))) {
		r = -ENOMEM;
		goto out;
	}
	d->emit = emit;
	d->arg = arg;
	d->tid0 = (uint32_t)TID_DERIVED_MIN; /* kThreadIdStepInfo, display id unset */
	if (rc->win)
		trace_derive_window(d, rc->win_from, rc->win_to);
	xprofs_buf_init(&d->tmp, 64);
	xprofs_buf_init(&d->lines[0].title, 16);
	d->lines[0].kind = DL_STEPS;
	for (int i = 0; i < DER_LEVELS; i++) {
		xprofs_buf_init(&d->lines[0].lv[i].name, 64);
		xprofs_buf_init(&d->lines[0].lv[i].disp, 1);
	}
	if ((r = xprofs_buf_adds(&d->lines[0].title, "Steps")) < 0 ||
	    (r = merge_open(rc, p, src, &k, false, 0)) < 0)
		goto out;
	if ((r = steps_merge(rc, src, k, d)) == 0) {
		/* XProf resets nothing at the end: the last step stays as it is */
		lv_close(d, &d->lines[0], 0);
		r = d->r;
	}
out:
	merge_close(src, k);
	free(src);
	trace_derive_free(d);
	return r;
}

/* ---- TensorCore planes (DeriveLinesFromStats) -------------------------------- */

/* What DeriveLinesFromStats() reads of one event: its metadata's stats, then its own. */
struct tpu_in {
	struct trace_derive *d; /* its s_tf and s_mod hold tf_op and source ("" when absent) */
	bool has_group;
	int64_t group;
	uint64_t is_async;
};

/* A stat's IntOrUintValue(): the integer, 0 for other kinds (as a protobuf oneof reads). */
static uint64_t int_or_uint(const struct xs_statv *s)
{
	return s->kind == SV_U64 || s->kind == SV_I64 ? s->u : 0;
}

/* A xs_stat_fn: tf_op, source, group_id and _a of one stat (arg: struct tpu_in); last wins. */
static int tpu_stat(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg)
{
	struct tpu_in *t = arg;
	const struct xs_stmd *m;
	bool has;
	int r;

	if ((r = xs_md_stat(rc, s->md, &m)) < 0)
		return r;
	/*
	 * kTfOp, kSourceInfo: StrOrRefValue(), "" for another kind; an empty
	 * string derives nothing, so only the strings (s_tf, s_mod) are kept.
	 */
	if (xs_str_eq(m->name, m->name_len, "tf_op")) {
		xprofs_buf_reset(&t->d->s_tf);
		return stat_str(rc, c, s, &t->d->s_tf, &has);
	}
	if (xs_str_eq(m->name, m->name_len, "source")) {
		xprofs_buf_reset(&t->d->s_mod);
		return stat_str(rc, c, s, &t->d->s_mod, &has);
	}
	if (xs_str_eq(m->name, m->name_len, "group_id")) { /* kGroupId */
		t->group = (int64_t)int_or_uint(s);
		t->has_group = true;
	} else if (xs_str_eq(m->name, m->name_len, "_a")) { /* kIsAsync */
		t->is_async = int_or_uint(s);
	}
	return 0;
}

/*
 * What an event metadata's stats give (struct tpu_in without the strings,
 * which sit in the derivation's arena): read once per metadata, since every
 * event of an op repeats them.
 */
struct tpu_md {
	bool done, has_group;
	int64_t group;
	uint64_t is_async;
	size_t tf_off, tf_len, src_off, src_len;
};
#define TPU_ARENA_MAX ((size_t)32 << 20) /* past this, metadata are read for every event */

struct tpu_cache {
	struct tpu_md *md; /* parallel to the plane's event metadata index */
	size_t n;
	struct xprofs_buf arena;
};

/*
 * @fn over the stats of the current plane's event metadata entry @k (an
 * index into its map), on the metadata cursor, which is left where it was.
 */
static int md_entry_stats(struct xs_rctx *rc, size_t k, xs_stat_fn fn, void *arg)
{
	const struct xs_md *e = &rc->x->planes[rc->plane].ev.md[k];
	struct wire_cur *c = &rc->md;
	uint64_t pos = c->pos, end = c->end;
	int r;

	c->pos = e->off;
	c->end = e->off + e->len;
	r = xs_walk_stats(rc, c, e->off, e->len, XEVMD_F_STATS, fn, arg);
	c->pos = pos;
	c->end = end;
	return r;
}

/*
 * The stats of event metadata @key of the current plane into @t (none when
 * the plane has no such entry), from @tc when read before.
 */
static int tpu_md_stats(struct xs_rctx *rc, struct tpu_cache *tc, int64_t key, struct tpu_in *t)
{
	const struct xs_mdix *ix = &rc->x->planes[rc->plane].ev;
	ssize_t k = xs_md_find(ix, key);
	struct tpu_md *m;
	int r;

	if (k < 0)
		return 0;
	m = (size_t)k < tc->n ? &tc->md[k] : NULL;
	if (m && m->done) {
		t->has_group = m->has_group;
		t->group = m->group;
		t->is_async = m->is_async;
		if ((r = set_str(&t->d->s_tf, tc->arena.data + m->tf_off, m->tf_len)) < 0)
			return r;
		return set_str(&t->d->s_mod, tc->arena.data + m->src_off, m->src_len);
	}
	r = md_entry_stats(rc, (size_t)k, tpu_stat, t);
	if (r < 0 || !m || tc->arena.len + t->d->s_tf.len + t->d->s_mod.len + 2 > TPU_ARENA_MAX)
		return r;
	*m = (struct tpu_md){.done = true,
			     .has_group = t->has_group,
			     .group = t->group,
			     .is_async = t->is_async,
			     .tf_off = tc->arena.len,
			     .tf_len = t->d->s_tf.len};
	if (xprofs_buf_add(&tc->arena, t->d->s_tf.data ? t->d->s_tf.data : "", m->tf_len) < 0 ||
	    xprofs_buf_add(&tc->arena, "", 0) < 0) {
		m->done = false;
		return 0; /* no room: read again next time */
	}
	m->src_off = tc->arena.len;
	m->src_len = t->d->s_mod.len;
	if (xprofs_buf_add(&tc->arena, t->d->s_mod.data ? t->d->s_mod.data : "", m->src_len) < 0)
		m->done = false;
	return 0;
}

/* Whether an open derived event of @d began before @t (it may still grow into a slice). */
static bool open_before(const struct trace_derive *d, xs_ps128 t)
{
	for (int k = 0; k < DL_COUNT; k++)
		for (int i = 0; i < DER_LEVELS; i++)
			if (d->lines[k].lv[i].open && d->lines[k].lv[i].begin < t)
				return true;
	return false;
}

/* FindTensorCorePlanes(): a name matching "/device:TPU:[0-9]*" whole. */
static bool is_tensor_core(const struct xs_plane *p)
{
	if (p->name_len < 12 || memcmp(p->name, "/device:TPU:", 12) != 0)
		return false;
	for (size_t i = 12; i < p->name_len; i++)
		if (p->name[i] < '0' || p->name[i] > '9')
			return false;
	return true;
}

/* The derived line ids a TensorCore plane already holds (bit per DL_*): not derived again. */
static uint8_t tpu_have(const struct xprofs_xspace *x, const struct xs_plane *p)
{
	uint8_t have = 0;

	for (size_t j = 0; j < p->n_lines; j++) {
		const struct xs_line *l = &x->lines[p->first_line + j];

		for (int k = 0; k < DL_COUNT; k++)
			if (tpu_tid_offset[k] &&
			    (int32_t)l->id == TID_DERIVED_MIN + (int32_t)tpu_tid_offset[k])
				have |= (uint8_t)(1u << k);
	}
	/* only these three are derived here */
	return have | (uint8_t)(1u << DL_MODULE | 1u << DL_HLO_OP);
}

/* ---- host-offload rows (HostOffloadEventProcessor) -------------------------- */

#define OFF_TID 8             /* kThreadIdHostOffloadOpStart - kThreadIdDerivedMin */
#define OFF_PENDING_MAX 65536 /* starts waiting for their done; past it, new ones are dropped */
#define OFF_BYTES_MAX ((size_t)16 << 20) /* and the bytes of their keys and shapes */

/* A start event waiting for its done: its begin and its metadata's shape_with_layout arg. */
struct off_start {
	xs_ps128 begin;
	char *shape; /* owned: "\"shape_with_layout\":..." or NULL */
	size_t shape_len;
};

/* The starts of one key waiting, oldest first: q[head, n). */
struct off_key {
	uint64_t hash; /* 0: free slot */
	char *key;     /* owned */
	size_t key_len;
	struct off_start *q;
	size_t head, n, cap;
};

struct der_offload {
	struct off_key *t; /* open addressing by key hash, a power of two slots */
	size_t cap, keys;
	size_t pending, bytes; /* starts waiting, and their keys' and shapes' bytes */
	size_t before_to;      /* of them, begun before the slice's window end (d->to) */
	xs_ps128 frontier[DER_OFFLOAD_ROWS]; /* each row's latest end */
	size_t rows;
	struct xs_out args; /* scratch: an event's args */
	char title[64];
};

static void offload_free(struct der_offload *o)
{
	if (!o)
		return;
	for (size_t i = 0; i < o->cap; i++) {
		struct off_key *k = &o->t[i];

		for (size_t j = k->head; j < k->n; j++)
			free(k->q[j].shape);
		free(k->q);
		free(k->key);
	}
	free(o->t);
	xs_out_deinit(&o->args);
	free(o);
}

/* The queue of key @s (@n bytes) in @o; made when @add (NULL past the bounds or out of memory). */
static struct off_key *offload_queue(struct der_offload *o, const char *s, size_t n, bool add)
{
	uint64_t h = xprofs_hash64(s, n) | 1;
	size_t i;

	if (add && (o->keys + 1) * 2 > o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 64;
		struct off_key *t = calloc(cap, sizeof(*t));

		if (!t)
			return NULL;
		for (size_t j = 0; j < o->cap; j++) {
			if (!o->t[j].hash)
				continue;
			for (i = o->t[j].hash & (cap - 1); t[i].hash; i = (i + 1) & (cap - 1))
				;
			t[i] = o->t[j];
		}
		free(o->t);
		o->t = t;
		o->cap = cap;
	}
	if (!o->cap)
		return NULL;
	for (i = h & (o->cap - 1); o->t[i].hash; i = (i + 1) & (o->cap - 1))
		if (o->t[i].hash == h && o->t[i].key_len == n && !memcmp(o->t[i].key, s, n))
			return &o->t[i];
	if (!add || !(o->t[i].key = malloc(n + 1)))
		return NULL;
	memcpy(o->t[i].key, s, n);
	o->t[i].key_len = n;
	o->t[i].hash = h;
	o->keys++;
	o->bytes += n;
	return &o->t[i];
}

/* IsHostOffloadOpName(): a copy/dynamic-slice start or done whose name holds the host memory space. */
static int offload_kind(const struct xs_evmd *m)
{
	static const char *const kw[] = {"copy-start",
					 "copy-done",
					 "dynamic-slice-start",
					 "dynamic-slice-done",
					 "dynamic-update-slice-start",
					 "dynamic-update-slice-done"};
	bool hit = false;

	/* the full name as JSON: escaping leaves "S(5)" (xla::Layout::kHostMemorySpace) alone */
	if (!m->name || !m->full_json || !memmem(m->full_json, m->full_json_len, "S(5)", 4))
		return 0;
	for (size_t i = 0; i < sizeof(kw) / sizeof(kw[0]) && !hit; i++)
		hit = memmem(m->name, m->name_len, kw[i], strlen(kw[i])) != NULL;
	if (!hit)
		return 0;
	if (memmem(m->name, m->name_len, "-start", 6))
		return 1;
	return memmem(m->name, m->name_len, "-done", 5) ? 2 : 0;
}

/*
 * GetOffloadInstructionName() of display name @n (@len bytes) into @b:
 * "offload-" + the name before "-start" (else "-done") + "." + the part
 * after its last '.' ("0" without one).
 */
static int offload_key(struct xprofs_buf *b, const char *n, size_t len)
{
	const char *dot = memrchr(n, '.', len), *st = memmem(n, len, "-start", 6);
	const char *dn = memmem(n, len, "-done", 5);
	size_t op = st ? (size_t)(st - n) : dn ? (size_t)(dn - n) : len;
	int r;

	xprofs_buf_reset(b);
	if ((r = xprofs_buf_adds(b, "offload-")) < 0 || (r = xprofs_buf_add(b, n, op)) < 0 ||
	    (r = xprofs_buf_adds(b, ".")) < 0)
		return r;
	return dot ? xprofs_buf_add(b, dot + 1, len - (size_t)(dot + 1 - n))
		   : xprofs_buf_adds(b, "0");
}

/* What offload_arg() keeps: the trace.json pair of one metadata stat, by name. */
struct off_arg {
	const char *name;
	struct xs_render_arg ra;
};

static int offload_arg(struct xs_rctx *rc, struct wire_cur *c, const struct xs_statv *s, void *arg)
{
	struct off_arg *a = arg;
	const struct xs_stmd *m;
	int r;

	if ((r = xs_md_stat(rc, s->md, &m)) < 0)
		return r;
	if (!xs_str_eq(m->name, m->name_len, a->name))
		return 0;
	return xs_render_stat(rc, c, s, &a->ra);
}

/* The "name":value pairs of event metadata @key's stats called @name, appended to @o. */
static int offload_md_arg(struct xs_rctx *rc, int64_t key, const char *name, struct xs_out *o)
{
	ssize_t k = xs_md_find(&rc->x->planes[rc->plane].ev, key);
	struct off_arg a = {name, {o, o->len == 0}};
	int r;

	if (k < 0)
		return 0;
	r = md_entry_stats(rc, (size_t)k, offload_arg, &a);
	return r < 0 ? r : o->r;
}

/* Whether a start still waiting for its done began before the slice's end (its event may overlap). */
static bool offload_pending_before_to(const struct trace_derive *d)
{
	return d->off && d->off->before_to > 0;
}

/*
 * ProcessHostOffloadOpEvent(): a start waits (by key, first in first out);
 * a done takes the oldest start of its key and makes one event [start,
 * done's end] named by the key, on the row whose latest end is the
 * earliest at or before its start (a new row when none fits, at most
 * DER_OFFLOAD_ROWS: then the last), with its done's raw_bytes_accessed and
 * its start's shape_with_layout (metadata stats) as args.
 */
static int offload_event(struct xs_rctx *rc, struct trace_derive *d, const struct step_src *src,
			 xs_ps128 begin, xs_ps128 end)
{
	struct der_offload *o = d->off;
	struct off_key *q;
	struct xs_evmd *m;
	struct off_start st;
	size_t row;
	int kind, r = 0;

	if ((r = xs_md_event(rc, src->ev.md, &m)) < 0)
		return r;
	if (!(kind = offload_kind(m)))
		return 0;
	if ((r = offload_key(&d->tmp, m->name, m->name_len)) < 0)
		return r;
	if (kind == 1) {
		if (o->pending >= OFF_PENDING_MAX || o->bytes + d->tmp.len > OFF_BYTES_MAX ||
		    !(q = offload_queue(o, d->tmp.data, d->tmp.len, true)))
			return 0; /* past the bounds: this start is not paired */
		o->args.len = 0;
		if ((r = offload_md_arg(rc, src->ev.md, "shape_with_layout", &o->args)) < 0)
			return r;
		if (q->head && q->head == q->n)
			q->head = q->n = 0;
		if ((r = xprofs_grow(&q->q, &q->cap, q->n, sizeof(*q->q), 4)) < 0)
			return r;
		st = (struct off_start){.begin = begin, .shape_len = o->args.len};
		if (o->args.len && !(st.shape = malloc(o->args.len)))
			return -ENOMEM;
		if (o->args.len)
			memcpy(st.shape, o->args.buf, o->args.len);
		q->q[q->n++] = st;
		o->pending++;
		o->bytes += st.shape_len;
		o->before_to += d->win && begin < d->to;
		return 0;
	}
	if (!(q = offload_queue(o, d->tmp.data, d->tmp.len, false)) || q->head == q->n)
		return 0; /* a done without a traced start */
	st = q->q[q->head++];
	o->pending--;
	o->bytes -= st.shape_len;
	o->before_to -= d->win && st.begin < d->to;
	begin = st.begin;
	if (end < begin)
		end = begin;
	/* the row with the earliest latest end at or before the start; ties: the later row */
	{
		xs_ps128 least = begin;
		bool fits = false;

		row = 0;
		for (size_t k = 0; k < o->rows; k++)
			if (o->frontier[k] <= least) {
				row = k;
				least = o->frontier[k];
				fits = true;
			}
		if (!fits) {
			if (o->rows < DER_OFFLOAD_ROWS)
				o->frontier[o->rows++] = end;
			row = o->rows - 1;
		}
	}
	if (o->frontier[row] < end)
		o->frontier[row] = end;
	/* the args: long_name (the new metadata has no name), then the event's stats in order */
	o->args.len = 0;
	if ((r = offload_md_arg(rc, src->ev.md, "raw_bytes_accessed", &o->args)) < 0)
		goto out;
	if (st.shape_len) {
		if (o->args.len)
			OUT_LIT(&o->args, ",");
		xs_out_add(&o->args, st.shape, st.shape_len);
	}
	if ((r = o->args.r) < 0)
		goto out;
	if (d->dry || (d->win && !(begin < d->to && (end > begin ? end : begin + 1) > d->from)))
		goto out; /* a slice keeps what overlaps its window */
	snprintf(o->title, sizeof(o->title), "Host Offload Ops row %zu", row);
	{
		struct trace_derived_ev e = {
			.kind = DL_OFFLOAD + (int)row,
			.tid = d->tid0 + OFF_TID + (uint32_t)row,
			.line_name = o->title,
			.line_name_len = strlen(o->title),
			.name = "",
			.name_len = 0,
			.disp = d->tmp.data,
			.disp_len = d->tmp.len,
			.begin = begin,
			.end = end,
			.args = o->args.buf,
			.args_len = o->args.len,
		};

		r = d->emit(d->arg, &e);
	}
out:
	free(st.shape);
	return r;
}

/* One event of the merge: ProcessTfOpEvent() of its tf_op, its source on Source code. */
static int tpu_event(struct xs_rctx *rc, struct tpu_cache *tc, struct step_src *src, xs_ps128 begin,
		     struct trace_derive *d)
{
	struct tpu_in t = {.d = d};
	struct trace_derived_in in;
	int r;

	xprofs_buf_reset(&d->s_tf);
	xprofs_buf_reset(&d->s_mod);
	if ((r = tpu_md_stats(rc, tc, src->ev.md, &t)) < 0)
		return r;
	if (src->ev.has_stats && (r = xs_walk_stats(rc, &src->c, src->ev.stats_off,
						    src->ev.off + src->ev.len - src->ev.stats_off,
						    XEVENT_F_STATS, tpu_stat, &t)) < 0)
		return r;
	if (t.is_async) /* asynchronous events are left out */
		return 0;
	memset(&in, 0, sizeof(in));
	in.d = d;
	in.has_group = t.has_group;
	in.group = t.group;
	in.begin = begin;
	in.end = begin + (src->ev.duration_ps > 0 ? src->ev.duration_ps : 0);
	if (d->s_tf.len) {
		/* tf_op_event() overwrites d->tmp only: the source string is in s_mod */
		if ((r = tf_op_event(d, d->s_tf.data, d->s_tf.len, &in)) < 0)
			return r;
	}
	if (d->s_mod.len && !(d->have & (1u << DL_SOURCE))) {
		if ((r = set_str(&d->tmp, d->s_mod.data, d->s_mod.len)) < 0 ||
		    (r = expand_or_add(d, &d->lines[DL_SOURCE], 0, &d->tmp, NULL, 0, &in)) < 0)
			return r;
	}
	if (d->off && (r = offload_event(rc, d, src, in.begin, in.end)) < 0)
		return r;
	return d->r;
}

/*
 * One walk of trace_derive_tpu(): from the plane's start, or (@from_ps > the
 * minimum) from each line's checkpoint before @from_ps (a lookback walk);
 * @dry: emit nothing, set *@inexact when an unsure event would overlap the
 * slice's window.
 */
static int tpu_walk(struct xs_rctx *rc, const struct xs_plane *p, size_t n, uint8_t have,
		    bool offload, trace_derived_emit_fn emit,
		    int (*after)(void *arg, const struct trace_derive *d), void *arg, bool lookback,
		    xs_ps128 from_ps, bool dry, bool *inexact)
{
	struct step_src *src = NULL;
	struct trace_derive *d = NULL;
	struct tpu_cache tc = {0};
	size_t k = 0;
	int r = 0;

	xprofs_buf_init(&tc.arena, TPU_ARENA_MAX);
	tc.n = p->ev.n;
	if (!(d = calloc(1, sizeof(*d))) || !(src = calloc(n, sizeof(*src))) ||
	    !(tc.md = calloc(tc.n ? tc.n : 1, sizeof(*tc.md)))) {
		r = -ENOMEM;
		goto out;
	}
	d->emit = emit;
	d->arg = arg;
	d->tpu = true;
	d->have = have;
	d->lookback = lookback;
	d->dry = dry;
	d->tid0 = (uint32_t)TID_DERIVED_MIN;
	if (rc->win)
		trace_derive_window(d, rc->win_from, rc->win_to);
	xprofs_buf_init(&d->tmp, 2 * DER_NAME_MAX + 64);
	xprofs_buf_init(&d->s_tf, DER_NAME_MAX + 1);
	xprofs_buf_init(&d->s_mod, DER_NAME_MAX + 1);
	xprofs_buf_init(&d->s_op, 1);
	xprofs_buf_init(&d->disp, DER_NAME_MAX + 1);
	for (int kk = 0; kk < DL_COUNT; kk++) {
		struct der_line *dl = &d->lines[kk];

		dl->kind = kk;
		xprofs_buf_init(&dl->title, 64);
		for (int i = 0; i < DER_LEVELS; i++) {
			xprofs_buf_init(&dl->lv[i].name, DER_NAME_MAX + 1);
			xprofs_buf_init(&dl->lv[i].disp, DER_NAME_MAX + 1);
			dl->fresh[i] = lookback; /* what came before is unknown */
		}
		/* the plain line names: first_derived_line_id is kThreadIdTfNameScope */
		if (r == 0 && xs_derived_names[kk])
			r = xprofs_buf_adds(&dl->title, xs_derived_names[kk]);
	}
	d->lines[DL_NAME_SCOPE].deps = 1u << DL_TF_OP;
	if (r == 0 && offload) {
		if (!(d->off = calloc(1, sizeof(*d->off))))
			r = -ENOMEM;
		else
			xs_out_init(&d->off->args, NULL);
	}
	if (r < 0 || (r = merge_open(rc, p, src, &k, lookback, from_ps)) < 0)
		goto out;
	for (;;) { /* GetSortedEvents(plane, true) */
		xs_ps128 bs = 0;
		struct step_src *best = merge_next(src, k, &bs);

		if (!best || (d->win && bs >= d->to && !open_before(d, d->to) &&
			      !offload_pending_before_to(d)))
			break; /* a slice: later events change nothing it shows */
		if ((r = tpu_event(rc, &tc, best, bs, d)) < 0 || (r = step_next(best)) < 0 ||
		    (!dry && after && (r = after(arg, d)) < 0))
			goto out;
		xs_md_gc(rc);
	}
	/* xprof resets the name scopes (and so Framework Ops) at the end, not Source code */
	reset(d, &d->lines[DL_NAME_SCOPE], 0);
	r = trace_derive_finish(d);
	if (inexact)
		*inexact = d->inexact;
out:
	merge_close(src, k);
	free(src);
	free(tc.md);
	xprofs_buf_deinit(&tc.arena);
	trace_derive_free(d);
	return r;
}

/*
 * Whether TensorCore plane @p (the current one) gets host-offload rows: it
 * has an event metadata IsHostOffloadOpName() takes, and no line of its own
 * with a row's id (kThreadIdHostOffloadOpStart..End).
 */
static int tpu_offload(struct xs_rctx *rc, const struct xs_plane *p, bool *out)
{
	const struct xs_mdix *ix = &p->ev;
	int r;

	*out = false;
	for (size_t j = 0; j < p->n_lines; j++) {
		int32_t id = (int32_t)rc->x->lines[p->first_line + j].id;

		if (id >= TID_DERIVED_MIN + OFF_TID &&
		    id < TID_DERIVED_MIN + OFF_TID + DER_OFFLOAD_ROWS)
			return 0;
	}
	for (size_t k = 0; k < ix->n && !*out; k++) {
		struct xs_evmd *m;

		if ((r = xs_md_event(rc, ix->md[k].key, &m)) < 0)
			return r;
		*out = offload_kind(m) != 0;
		xs_md_gc(rc);
	}
	return 0;
}

/* A slice looks this far before its window (at least), as a multiple of its length. */
#define TPU_LOOKBACK_WINDOWS 2
#define TPU_LOOKBACK_MIN_PS ((xs_ps128)1000000000) /* 1 ms */

/*
 * A slice does not walk the plane from its start. It walks from each line's
 * checkpoint before (window start - lookback), where nothing earlier ends
 * later, marking the derived events that the whole walk might have made
 * differently (an event that may continue one begun before the lookback,
 * and what follows from it: struct der_ev's unsure, struct der_line's
 * fresh). A dry run says whether any such event overlaps the window; if
 * none does, the lookback walk's output is the whole walk's, and it is
 * written; otherwise the plane is walked from its start.
 */
int trace_derive_tpu(struct xs_rctx *rc, size_t pi, trace_derived_emit_fn emit,
		     int (*after)(void *arg, const struct trace_derive *d), void *arg)
{
	const struct xs_plane *p = &rc->x->planes[pi];
	size_t n = 0;
	uint8_t have;
	bool inexact = true, offload = false;
	int r;

	if ((r = xs_plane_enter(rc, pi)) < 0 || !is_tensor_core(p))
		return r;
	if ((r = tpu_offload(rc, p, &offload)) < 0)
		return r;
	if ((have = tpu_have(rc->x, p)) == DL_ALL && !offload)
		return 0;
	for (size_t j = 0; j < p->n_lines; j++)
		if (rc->x->lines[p->first_line + j].msg.len)
			n++;
	if (n == 0 || n > DER_TPU_LINES) /* one cursor per line */
		return 0;
	/* a start's pairing needs every start before it: host-offload rows take the whole walk */
	if (rc->win && !rc->x->tracks_only && !offload) {
		xs_ps128 len = rc->win_to - rc->win_from, back = len * TPU_LOOKBACK_WINDOWS;
		xs_ps128 from =
			rc->win_from - (back > TPU_LOOKBACK_MIN_PS ? back : TPU_LOOKBACK_MIN_PS);

		if ((r = tpu_walk(rc, p, n, have, false, emit, after, arg, true, from, true,
				  &inexact)) < 0)
			return r;
		if (!inexact)
			return tpu_walk(rc, p, n, have, false, emit, after, arg, true, from, false,
					NULL);
	}
	return tpu_walk(rc, p, n, have, offload, emit, after, arg, false, 0, false, NULL);
}
