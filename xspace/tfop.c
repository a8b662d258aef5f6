/*
 * tfop.c - a framework op's full name (the tf_op stat) parsed as TSL's
 * ParseTfOpFullname() does (category, name, type): shared by the trace's
 * derived lines (trace/tfop.c) and the GPU op table (stats/ops.c).
 *
 * Sources: TSL tf_op_utils.cc ParseTfOpFullname(), DeriveOpType(),
 * IsTfOpName(), IsTfOpType(), IsJaxOpType(), GetMemcpyOp().
 *
 * Design: TSL's regular expressions are matched by hand, with ASCII classes
 * as RE2 reads them (no locale); a parsed op borrows the string it was
 * parsed from. Limits: none (no allocation).
 */
#include <stdint.h>
#include <string.h>

#include "xprofs/xspace.h"

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

static void tfop_set(struct xs_tfop *op, enum xs_tfop_cat cat, const char *type, size_t type_len)
{
	op->cat = cat;
	op->type = type;
	op->type_len = type_len;
}

void xs_tfop_parse(const char *s, size_t n, struct xs_tfop *op)
{
	static const struct {
		const char *prefix, *type;
		enum xs_tfop_cat cat;
	} memcpys[] = {
		{"MEMCPYHToD", "MemcpyHToD", XS_TFOP_MEMCPY_HTOD},
		{"MEMCPYDToH", "MemcpyDToH", XS_TFOP_MEMCPY_DTOH},
		{"MEMCPYDToD", "MemcpyDToD", XS_TFOP_MEMCPY_DTOD},
		{"MEMCPYHToH", "MemcpyHToH", XS_TFOP_MEMCPY_HTOH},
	};
	const char *colon = memchr(s, ':', n), *p1, *t;
	size_t n0, n1, tn;

	op->name = s;
	op->name_len = n;
	tfop_set(op, XS_TFOP_UNKNOWN, "", 0); /* kUnknownOp */
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
		tfop_set(op, XS_TFOP_TF_DATA, "Dataset", 7);
		return;
	}
	if (tf_op_name_ok(s, n0) && tf_op_type_ok(p1, n1)) {
		op->name_len = n0;
		tfop_set(op, XS_TFOP_TENSORFLOW, p1, n1);
		return;
	}
	t = p1, tn = n1;
	if (!n1)
		derive_op_type(s, n0, &t, &tn);
	if (jax_op_type_ok(t, tn)) {
		const char *br =
			memchr(t, '[', tn); /* "transpose[permutation=...]" -> "transpose" */

		op->name_len = n0;
		tfop_set(op, XS_TFOP_JAX, t, br ? (size_t)(br - t) : tn);
	} else if (!n1) {
		op->name_len = n0;
		tfop_set(op, XS_TFOP_TENSORFLOW, t, tn);
	}
}
