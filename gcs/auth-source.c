/*
 * gcs/auth-source.c - where the credentials come from, in Application
 * Default Credentials order (gcs_auth_source()):
 *   1. o->anonymous, or an emulator named in the environment (and no explicit
 *      credentials) -> no Authorization header;
 *   2. o->credentials, else $GOOGLE_APPLICATION_CREDENTIALS: a JSON file of
 *      type "service_account", "authorized_user" or "external_account"
 *      (workload identity federation: a file- or URL-sourced subject token
 *      exchanged at STS; google-auth's identity_pool). Unreadable or malformed
 *      is an error: never fall through to another identity;
 *   3. $CLOUDSDK_CONFIG/application_default_credentials.json, else
 *      ~/.config/gcloud/application_default_credentials.json (same types);
 *      absent -> next, present but bad -> error;
 *   4. the metadata server ($GCE_METADATA_HOST, $GCE_METADATA_ROOT, default
 *      metadata.google.internal).
 *
 * impersonated_service_account files (service_account or authorized_user
 * source credentials) and an external_account's
 * service_account_impersonation_url trade the token at IAM (auth.c).
 *
 * Limits: credentials files are capped at GCS_AUTH_FILE_MAX (64 KiB);
 * AWS and executable subject tokens and URL headers are not supported
 * (-ENOTSUP with a message). jansson's copies of the secrets are
 * wiped before they are freed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/crypto.h>

#include "auth-internal.h"

#define AUTH_DEFAULT_TOKEN_URI "https://oauth2.googleapis.com/token"
#define AUTH_METADATA_HOST "metadata.google.internal"
#define AUTH_METADATA_PATH "/computeMetadata/v1/instance/service-accounts/default/token"

static const char *env_nonempty(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* ---- credentials files --------------------------------------------------- */

/* Duplicate string member @key of @j into *@dst; -EINVAL when required and absent. */
static int json_dup(const json_t *j, const char *key, bool required, char **dst)
{
	const char *v = json_string_value(json_object_get(j, key));

	if (!v || !*v)
		return required ? -EINVAL : 0;
	*dst = strdup(v);
	return *dst ? 0 : -ENOMEM;
}

/* Read at most GCS_AUTH_FILE_MAX bytes of @path into @b. */
static int read_small_file(const char *path, struct xprofs_buf *b)
{
	char chunk[4096];
	ssize_t n;
	int fd, r = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		if (n == 0)
			break;
		r = xprofs_buf_add(b, chunk, (size_t)n);
		if (r < 0)
			break;
	}
	OPENSSL_cleanse(chunk, sizeof(chunk));
	close(fd);
	return r;
}

/* The credentials file types we read, and where their members go. */
struct cred_field {
	const char *key;
	size_t off; /* of the char * member of struct gcs_auth */
	bool required;
	bool secret; /* jansson's copy is wiped */
};

static const struct cred_type {
	const char *type;
	enum gcs_auth_kind kind;
	const char *lacks; /* the required members, for the message */
	struct cred_field fields[4];
} cred_types[] = {
	{"service_account",
	 GCS_AUTH_SERVICE_ACCOUNT,
	 "client_email or private_key",
	 {
		 {"client_email", offsetof(struct gcs_auth, client_email), true, false},
		 {"private_key", offsetof(struct gcs_auth, private_key), true, true},
		 {"private_key_id", offsetof(struct gcs_auth, private_key_id), false, false},
		 {"token_uri", offsetof(struct gcs_auth, token_uri), false, false},
	 }},
	{"authorized_user",
	 GCS_AUTH_AUTHORIZED_USER,
	 "client_id, client_secret or refresh_token",
	 {
		 {"client_id", offsetof(struct gcs_auth, client_id), true, false},
		 {"client_secret", offsetof(struct gcs_auth, client_secret), true, true},
		 {"refresh_token", offsetof(struct gcs_auth, refresh_token), true, true},
		 {"token_uri", offsetof(struct gcs_auth, token_uri), false, false},
	 }},
};

#define N_CRED_TYPES (sizeof(cred_types) / sizeof(cred_types[0]))
#define N_CRED_FIELDS (sizeof(cred_types[0].fields) / sizeof(cred_types[0].fields[0]))

/* Copy @t's members from @root (borrowed) into @a; -EINVAL when a required one is missing. */
static int load_fields(struct gcs_auth *a, const struct cred_type *t, const json_t *root,
		       const char *path)
{
	size_t i;
	int r = 0;

	a->kind = t->kind;
	for (i = 0; i < N_CRED_FIELDS && r == 0; i++)
		r = json_dup(root, t->fields[i].key, t->fields[i].required,
			     (char **)((char *)a + t->fields[i].off));
	if (r == -EINVAL)
		xprofs_err("gcs auth: %s file %s lacks %s", t->type, path, t->lacks);
	return r;
}

/* Wipe jansson's copies of the secrets of every type in @root. */
static void wipe_json_secrets(json_t *root)
{
	size_t i, k;

	for (i = 0; i < N_CRED_TYPES; i++) {
		for (k = 0; k < N_CRED_FIELDS; k++) {
			json_t *v = json_object_get(root, cred_types[i].fields[k].key);

			if (cred_types[i].fields[k].secret && json_is_string(v))
				OPENSSL_cleanse((char *)json_string_value(v),
						json_string_length(v));
		}
	}
	/* an impersonated_service_account's secrets sit one level down */
	root = json_object_get(root, "source_credentials");
	if (json_is_object(root))
		wipe_json_secrets(root);
}

/* Read and parse the credentials file @path; *@root: caller owns (json_decref()). Logs failures. */
static int read_json_file(const char *path, json_t **root)
{
	struct xprofs_buf raw;
	json_error_t jerr;
	json_t *j = NULL;
	int r;

	xprofs_buf_init(&raw, GCS_AUTH_FILE_MAX);
	r = read_small_file(path, &raw);
	if (r < 0) {
		xprofs_err("gcs auth: cannot read credentials file %s: %s", path,
			   r == -E2BIG ? "larger than 64 KiB" : strerror(-r));
		if (r == -E2BIG)
			r = -EINVAL;
		goto out;
	}
	j = json_loadb(raw.data ? raw.data : "", raw.len, JSON_REJECT_DUPLICATES, &jerr);
	if (!j || !json_is_object(j)) {
		xprofs_err("gcs auth: credentials file %s is not a JSON object (line %d: %.120s)",
			   path, j ? 0 : jerr.line, j ? "not an object" : jerr.text);
		r = -EINVAL;
	}
out:
	if (j && r < 0) {
		wipe_json_secrets(j);
		json_decref(j);
		j = NULL;
	}
	*root = j;
	gcs_secret_buf_deinit(&raw);
	return r;
}

static int imp_parse(struct gcs_auth *a, const json_t *root, const char *path);

/*
 * Load the credentials JSON file @path (borrowed) into @a. Every failure is
 * logged with the file name and what is wrong, and is final: the caller does
 * not fall through to another identity.
 */
static int load_file(struct gcs_auth *a, const char *path)
{
	json_t *root = NULL;
	int r;

	a->source = strdup(path);
	if (!a->source)
		return -ENOMEM;
	r = read_json_file(path, &root);
	if (r < 0)
		return r;
	r = gcs_auth_json_load(a, root, path);
	wipe_json_secrets(root);
	json_decref(root);
	return r;
}

int gcs_auth_json_load(struct gcs_auth *a, const void *jroot, const char *path)
{
	const struct cred_type *t = NULL;
	const json_t *root = jroot;
	const char *type;
	size_t i;
	int r;

	type = json_string_value(json_object_get(root, "type"));
	for (i = 0; type && i < N_CRED_TYPES && !t; i++)
		if (strcmp(type, cred_types[i].type) == 0)
			t = &cred_types[i];
	if (t) {
		r = load_fields(a, t, root, path);
	} else if (type && strcmp(type, "external_account") == 0) {
		r = gcs_auth_external_parse(a, root, path);
	} else if (type && strcmp(type, "impersonated_service_account") == 0) {
		r = imp_parse(a, root, path);
	} else {
		xprofs_err("gcs auth: credentials file %s has type \"%.40s\"; supported: "
			   "service_account, authorized_user, external_account, "
			   "impersonated_service_account",
			   path, type ? type : "(none)");
		r = type ? -ENOTSUP : -EINVAL;
	}
	if (r == 0 && !a->token_uri) {
		a->token_uri = strdup(AUTH_DEFAULT_TOKEN_URI);
		if (!a->token_uri)
			r = -ENOMEM;
	}
	if (r == 0 && strncmp(a->token_uri, "https://", 8) != 0 &&
	    strncmp(a->token_uri, "http://", 7) != 0) {
		xprofs_err("gcs auth: credentials file %s: token_uri is not an http(s) URL", path);
		r = -EINVAL;
	}
	return r;
}

/* ---- impersonation and external_account ----------------------------------- */

/* The impersonation URL (and delegates) of @root into @a; @required for impersonated_service_account. */
static int imp_url_parse(struct gcs_auth *a, const json_t *root, bool required, const char *path)
{
	const json_t *d = json_object_get(root, "delegates"), *v;
	size_t i;
	int r = json_dup(root, "service_account_impersonation_url", required, &a->imp_url);

	if (r == 0 && a->imp_url && strncmp(a->imp_url, "https://", 8) != 0 &&
	    strncmp(a->imp_url, "http://", 7) != 0)
		r = -EINVAL;
	json_array_foreach(d, i, v) if (!json_is_string(v)) r = -EINVAL;
	if (r == 0 && d && (!json_is_array(d) || !(a->imp_delegates = json_dumps(d, JSON_COMPACT))))
		r = json_is_array(d) ? -ENOMEM : -EINVAL;
	if (r == -EINVAL)
		xprofs_err("gcs auth: credentials file %s: service_account_impersonation_url is "
			   "missing or not an http(s) URL, or delegates is not a list of names",
			   path);
	return r;
}

/* An impersonated_service_account file: its source_credentials, then impersonation. */
static int imp_parse(struct gcs_auth *a, const json_t *root, const char *path)
{
	const json_t *src = json_object_get(root, "source_credentials");
	const char *type = json_string_value(json_object_get(src, "type"));
	size_t i;
	int r;

	for (i = 0; type && i < N_CRED_TYPES; i++)
		if (strcmp(type, cred_types[i].type) == 0)
			break;
	if (!type || i == N_CRED_TYPES) {
		xprofs_err("gcs auth: impersonated_service_account file %s: source_credentials "
			   "must be service_account or authorized_user credentials",
			   path);
		return type ? -ENOTSUP : -EINVAL;
	}
	r = load_fields(a, &cred_types[i], src, path);
	return r < 0 ? r : imp_url_parse(a, root, true, path);
}

int gcs_auth_external_parse(struct gcs_auth *a, const void *jroot, const char *path)
{
	const json_t *root = jroot, *cs = json_object_get(root, "credential_source"), *fmt;
	const char *ftype = NULL;
	int r;

	a->kind = GCS_AUTH_EXTERNAL_ACCOUNT;
	if ((r = imp_url_parse(a, root, false, path)) < 0)
		return r;
	if (!json_is_object(cs) || json_object_get(cs, "environment_id") ||
	    json_object_get(cs, "executable")) {
		xprofs_err("gcs auth: external_account file %s: credential_source %s", path,
			   json_is_object(cs) ? "of AWS or an executable is not supported"
					      : "is missing");
		return json_is_object(cs) ? -ENOTSUP : -EINVAL;
	}
	if ((r = json_dup(root, "audience", true, &a->audience)) < 0 ||
	    (r = json_dup(root, "subject_token_type", true, &a->subject_token_type)) < 0 ||
	    (r = json_dup(root, "token_url", true, &a->token_uri)) < 0 ||
	    (r = json_dup(cs, "file", false, &a->subject_file)) < 0 ||
	    (r = json_dup(cs, "url", false, &a->subject_url)) < 0)
		goto bad;
	if (!a->subject_file == !a->subject_url || json_object_get(cs, "headers")) {
		r = json_object_get(cs, "headers") ? -ENOTSUP : -EINVAL;
		xprofs_err(
			"gcs auth: external_account file %s: credential_source needs exactly one "
			"of file and url (and no headers)",
			path);
		return r;
	}
	fmt = json_object_get(cs, "format");
	if (fmt && !json_is_object(fmt)) {
		r = -EINVAL;
		goto bad;
	}
	ftype = fmt ? json_string_value(json_object_get(fmt, "type")) : NULL;
	if (ftype && strcmp(ftype, "json") == 0)
		r = json_dup(fmt, "subject_token_field_name", true, &a->subject_field);
	else if (ftype && strcmp(ftype, "text") != 0)
		r = -EINVAL;
	if (r < 0)
		goto bad;
	return 0;
bad:
	if (r == -EINVAL)
		xprofs_err("gcs auth: external_account file %s lacks audience, subject_token_type, "
			   "token_url or a valid credential_source",
			   path);
	return r;
}

int gcs_auth_subject_extract(const struct xprofs_buf *b, const char *field, char **out)
{
	const char *p = b->data ? b->data : "";
	size_t n = b->len;
	json_t *j = NULL;

	if (field) {
		j = json_loadb(p, n, 0, NULL);
		p = json_string_value(json_object_get(j, field));
		n = p ? strlen(p) : 0;
		if (!p)
			p = "";
	}
	while (n > 0 && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) {
		p++;
		n--;
	}
	while (n > 0 &&
	       (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r' || p[n - 1] == '\n'))
		n--;
	if (memchr(p, '\0', n))
		n = 0; /* a token with a NUL in it is no token */
	*out = n ? strndup(p, n) : NULL;
	if (j) {
		const char *v = json_string_value(json_object_get(j, field));

		if (v)
			OPENSSL_cleanse((char *)v, strlen(v));
		json_decref(j);
	}
	return n == 0 ? -EACCES : *out ? 0 : -ENOMEM;
}

int gcs_auth_subject_token(struct gcs_auth *a, char **out)
{
	struct xprofs_buf b;
	int r;

	xprofs_buf_init(&b, GCS_AUTH_FILE_MAX);
	if (a->subject_file) {
		r = read_small_file(a->subject_file, &b);
	} else {
		struct gcs_req rq = {.kind = GCS_REQ_OTHER,
				     .method = "GET",
				     .url = a->subject_url,
				     .idempotent = true,
				     .resp = &b};

		r = gcs_http_do(&a->http, &rq);
		if (r == 0 && rq.status != 200)
			r = -EACCES;
	}
	if (r == 0)
		r = gcs_auth_subject_extract(&b, a->subject_field, out);
	if (r < 0)
		xprofs_err(
			"gcs auth: external_account credentials from %s: no subject token from %s: "
			"%s",
			a->source, a->subject_file ? a->subject_file : a->subject_url,
			r == -EACCES ? "empty, unreadable or not the named JSON field"
				     : strerror(-r));
	gcs_secret_buf_deinit(&b);
	return r;
}

/* The gcloud well-known file, or NULL when it does not exist. Caller owns. */
static char *adc_well_known_path(void)
{
	const char *dir = env_nonempty("CLOUDSDK_CONFIG");
	const char *home = env_nonempty("HOME");
	char *path = NULL;
	int n;

	if (dir)
		n = asprintf(&path, "%s/application_default_credentials.json", dir);
	else if (home)
		n = asprintf(&path, "%s/.config/gcloud/application_default_credentials.json", home);
	else
		return NULL;
	if (n < 0)
		return NULL;
	if (access(path, F_OK) != 0) {
		free(path);
		return NULL;
	}
	return path;
}

static int use_metadata(struct gcs_auth *a)
{
	const char *host = env_nonempty("GCE_METADATA_HOST");
	const char *scheme;

	if (!host)
		host = env_nonempty("GCE_METADATA_ROOT");
	if (!host)
		host = AUTH_METADATA_HOST;
	/* Accept "host:port" (what Google's clients read) and a full URL. */
	scheme = strstr(host, "://") ? "" : "http://";
	a->kind = GCS_AUTH_METADATA;
	if (asprintf(&a->metadata_url, "%s%s%s", scheme, host, AUTH_METADATA_PATH) < 0) {
		a->metadata_url = NULL;
		return -ENOMEM;
	}
	if (asprintf(&a->source, "the metadata server %s", host) < 0) {
		a->source = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* ---- ADC order ------------------------------------------------------------- */

int gcs_auth_source(struct gcs_auth *a, const struct xprofs_gcs_options *o)
{
	const char *file;
	char *adc;
	bool emulator;
	int r;

	a->kind = GCS_AUTH_ANONYMOUS;
	file = o->credentials && *o->credentials ? o->credentials
						 : env_nonempty("GOOGLE_APPLICATION_CREDENTIALS");
	emulator = !o->endpoint && (env_nonempty("CLOUD_STORAGE_EMULATOR_ENDPOINT") ||
				    env_nonempty("STORAGE_EMULATOR_HOST"));
	/* An explicit file wins over an emulator picked up from the environment. */
	if (o->anonymous || (emulator && !(o->credentials && *o->credentials)))
		return 0;
	if (file)
		return load_file(a, file);
	adc = adc_well_known_path();
	r = adc ? load_file(a, adc) : use_metadata(a);
	free(adc);
	return r;
}
