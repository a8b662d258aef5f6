/*
 * capture-internal.h - what the files of capture/ share: the control-line
 * parser (line.c), the gRPC response stream parsers (frames.c) and the
 * unary gRPC client over libcurl (grpc.c), and the manager built on top
 * (runs.c, submit.c, session.c, status.c). Not installed; tests and fuzz
 * targets include it directly.
 */
#ifndef XPROFS_CAPTURE_INTERNAL_H
#define XPROFS_CAPTURE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xprofs/capture.h"
#include "xprofs/store.h"
#include "xprofs/util.h"

/* ---- control lines (line.c) ------------------------------------------- */

#define CAPTURE_MAX_LINE 8192   /* one control line, bytes */
#define CAPTURE_MAX_HOSTS 64    /* servers per capture */
#define CAPTURE_MAX_HOSTLEN 255 /* "host:port" */
#define CAPTURE_MAX_NAME 255    /* session / host directory name */
#define CAPTURE_MAX_RUN 1024    /* run path (may be nested) */
#define CAPTURE_MAX_ADV 32      /* advanced_configuration entries */
#define CAPTURE_MAX_ADV_KEY 128
#define CAPTURE_MAX_ADV_VAL 1024
#define CAPTURE_DEFAULT_RUN "captures"
#define CAPTURE_DEFAULT_DURATION_MS 1000
#define CAPTURE_MULTI_HOST_DELAY_MS 3000 /* like the official client */

enum capture_cmd {
	CAPTURE_CMD_PROFILE = 1,
	CAPTURE_CMD_STOP,
	CAPTURE_CMD_SNAPSHOT,
	CAPTURE_CMD_CONT_START,
	CAPTURE_CMD_CONT_STOP,
};

enum capture_adv_type {
	CAPTURE_ADV_STRING = 1,
	CAPTURE_ADV_BOOL,
	CAPTURE_ADV_INT,
};

struct capture_adv {
	char key[CAPTURE_MAX_ADV_KEY + 1];
	int type; /* enum capture_adv_type */
	char str[CAPTURE_MAX_ADV_VAL + 1];
	bool b;
	int64_t i;
};

/* One parsed control line; plain value struct, no pointers. */
struct capture_req {
	int cmd;                       /* enum capture_cmd */
	bool has_run;                  /* run= given */
	char run[CAPTURE_MAX_RUN + 1]; /* "" = the logdir root (run=.) */
	size_t n_hosts;
	char hosts[CAPTURE_MAX_HOSTS][CAPTURE_MAX_HOSTLEN + 1];
	uint64_t duration_ms;
	uint32_t host_tracer_level;
	uint32_t device_tracer_level;
	uint32_t python_tracer_level;
	bool has_delay;
	uint64_t delay_ms;
	bool has_deadline;
	uint64_t deadline_ms;
	char session[CAPTURE_MAX_NAME + 1];  /* "" = default (timestamp) */
	char host_dir[CAPTURE_MAX_NAME + 1]; /* "" = derived from the host */
	size_t n_adv;
	struct capture_adv adv[CAPTURE_MAX_ADV];
	unsigned n_opts; /* KEY=VALUE words other than run= */
};

/**
 * capture_line_parse() - parse one control line (@line, @len borrowed; no
 * newline inside) into @out (all fields written). Blank lines and lines
 * starting with '#' give -ENODATA. Return 0, -ENODATA or -EINVAL with a
 * human reason appended to @reason (optional).
 */
int capture_line_parse(const char *line, size_t len, struct capture_req *out,
		       struct xprofs_buf *reason);

/* Assembles the bytes written to one open control file into lines (input.c). */
struct capture_asm {
	size_t len;    /* bytes of the pending (unterminated) line in buf */
	bool overflow; /* a line passed CAPTURE_MAX_LINE: drop bytes up to its '\n' */
	char buf[CAPTURE_MAX_LINE];
};

void capture_asm_init(struct capture_asm *a);
/**
 * capture_asm_feed() - take bytes @p[0..@n) (borrowed), *@used of them.
 * 1: a whole line (no newline) in @line and @len, pointing into @p or @a (valid
 * until the next call); 0: all taken, kept as the start of a line;
 * -EMSGSIZE: the line passed CAPTURE_MAX_LINE (refused; its rest up to its
 * '\n' is dropped, in this call or later ones).
 */
int capture_asm_feed(struct capture_asm *a, const char *p, size_t n, size_t *used,
		     const char **line, size_t *len);
/** capture_asm_end() - at close: 1 with the unterminated last line in @line and @len, else 0. */
int capture_asm_end(struct capture_asm *a, const char **line, size_t *len);
/** capture_line_blank() - blank or a '#' comment: nothing to act on. */
bool capture_line_blank(const char *line, size_t len);

/** capture_name_valid() - a safe single path component (no '/', not "." / "..", no control chars). */
bool capture_name_valid(const char *s, size_t len);
/** capture_host_dirname() - "host:port" -> "host_port" into @out (@cap bytes); 0 or -ENAMETOOLONG. */
int capture_host_dirname(const char *host, char *out, size_t cap);

/* ---- gRPC response stream (frames.c) ---------------------------------- */

/*
 * A gRPC message consumer: the frame parser calls begin() with the
 * message's declared length (already checked against the maximum), data()
 * with its bytes as they arrive and end() after its last byte. Each returns
 * 0 or -errno (which stops the stream).
 */
struct capture_msg_ops {
	int (*begin)(void *arg, uint64_t len);
	int (*data)(void *arg, const uint8_t *p, size_t n);
	int (*end)(void *arg);
};

/* gRPC length-prefixed message framing (1 flag byte, 4-byte BE length). */
struct capture_frames {
	const struct capture_msg_ops *ops;
	void *arg;
	uint64_t max_msg;  /* longest message accepted */
	unsigned max_msgs; /* messages accepted (1 for a unary response) */
	unsigned n_msgs;
	uint8_t hdr[5];
	unsigned hdr_len;
	uint64_t left; /* bytes of the current message still to come */
	bool in_msg;
	int err; /* sticky */
};

/** capture_frames_init() - @ops/@arg borrowed. */
void capture_frames_init(struct capture_frames *f, const struct capture_msg_ops *ops, void *arg,
			 uint64_t max_msg, unsigned max_msgs);
/** capture_frames_feed() - borrows @p; 0 or -errno (-EPROTO, -EMSGSIZE, or the consumer's). */
int capture_frames_feed(struct capture_frames *f, const void *p, size_t n) XPROFS_WUR;
/** capture_frames_finish() - end of stream: -EPROTO when it stopped inside a frame. */
int capture_frames_finish(struct capture_frames *f) XPROFS_WUR;

#define CAPTURE_MAX_TOOL_DATA (64u << 20) /* all tool_data entries together */
#define CAPTURE_MAX_TOOLS 16              /* tool names remembered */

/*
 * An incremental parser of a tensorflow.ProfileResponse: field 8 (xspace)
 * bytes go straight to @xspace as they arrive (every occurrence, which is
 * exactly protobuf's merge of a repeated embedded message); tool_data (6) is
 * buffered under a cap and decoded; unknown fields are skipped without being
 * buffered. Lengths are checked against the enclosing message, never used to
 * allocate.
 */
struct capture_resp {
	struct xprofs_sink xspace; /* borrowed */
	/* results */
	bool empty_trace;
	bool has_xspace;
	uint64_t xspace_bytes;
	unsigned n_tools;
	char tools[CAPTURE_MAX_TOOLS][64];
	uint64_t tool_bytes;
	/* state */
	uint64_t msg_left; /* bytes of the message not parsed yet */
	int st;            /* private state machine */
	uint8_t vbuf[10];
	unsigned vlen;
	uint32_t field, wire;
	uint64_t fleft;         /* bytes of the current field still to come */
	struct xprofs_buf tool; /* current tool_data submessage */
};

/** capture_resp_init() - @xspace borrowed (its arg must outlive the parser). */
void capture_resp_init(struct capture_resp *r, struct xprofs_sink xspace);
void capture_resp_deinit(struct capture_resp *r);
/** capture_resp_ops - the consumer to plug into struct capture_frames (arg: the capture_resp). */
extern const struct capture_msg_ops capture_resp_ops;

/* Collects a small message whole (arg: struct xprofs_buf with a max). */
extern const struct capture_msg_ops capture_buf_ops;

/* ---- unary gRPC call over libcurl (grpc.c) ---------------------------- */

enum capture_grpc_code {
	GRPC_OK = 0,
	GRPC_CANCELLED = 1,
	GRPC_UNKNOWN = 2,
	GRPC_INVALID_ARGUMENT = 3,
	GRPC_DEADLINE_EXCEEDED = 4,
	GRPC_NOT_FOUND = 5,
	GRPC_ALREADY_EXISTS = 6,
	GRPC_PERMISSION_DENIED = 7,
	GRPC_RESOURCE_EXHAUSTED = 8,
	GRPC_FAILED_PRECONDITION = 9,
	GRPC_ABORTED = 10,
	GRPC_OUT_OF_RANGE = 11,
	GRPC_UNIMPLEMENTED = 12,
	GRPC_INTERNAL = 13,
	GRPC_UNAVAILABLE = 14,
	GRPC_DATA_LOSS = 15,
	GRPC_UNAUTHENTICATED = 16,
};

struct capture_call {
	/* in (borrowed) */
	const char *target; /* "host:port" */
	const char *method; /* "/tensorflow.ProfilerService/Profile" */
	const uint8_t *req; /* serialized request message */
	size_t req_len;
	uint64_t deadline_ms;              /* whole call; also sent as grpc-timeout */
	uint64_t connect_ms;               /* TCP connect */
	uint64_t max_msg;                  /* longest response message accepted */
	const struct capture_msg_ops *ops; /* response consumer */
	void *ops_arg;
	atomic_int *cancel; /* optional: non-zero aborts the transfer */
	/* out */
	int grpc_status;        /* -1 when none arrived */
	char grpc_message[256]; /* percent-decoded, truncated */
	int curl_code;          /* CURLcode */
	long http_status;
	int stream_err;    /* -errno from the response consumer, 0 if none */
	uint64_t rx_bytes; /* response body bytes */
};

/**
 * capture_grpc_unary() - one unary call on a fresh h2c connection.
 * Return: 0 when grpc-status is OK and the response parsed, else -errno as
 * mapped by capture_grpc_errno() (details stay in @call).
 */
int capture_grpc_unary(struct capture_call *call) XPROFS_WUR;

/**
 * capture_grpc_errno() - THE mapping of a call's outcome (gRPC status,
 * CURLcode, HTTP status, stream error) to -errno plus a human string
 * (static storage) in @what. 0 for success.
 */
int capture_grpc_errno(const struct capture_call *call, const char **what);

/** capture_grpc_timeout_header() - "grpc-timeout: N<unit>" for @ms (<= 8 digits, spec). */
void capture_grpc_timeout_header(uint64_t ms, char *out, size_t cap);

/** capture_pct_decode() - percent-decode @in into @out (@cap incl. NUL), truncating. */
void capture_pct_decode(const char *in, size_t n, char *out, size_t cap);

/* ---- the manager (runs.c, submit.c, session.c, status.c) ----------------- */

/*
 * Lock order: c->lock is the manager's only mutex and nests with no other
 * lock: notify() and store writes run without it, running coordinators are
 * joined without it (capture_reap() joins only finished ones under it).
 * c->cond (a session finished) waits on c->lock. Fields marked "under
 * c->lock" below are protected by it.
 */
enum capture_state {
	ST_RUNNING = 0,
	ST_OK,
	ST_EMPTY,
	ST_UNREACHABLE,
	ST_TIMEOUT,
	ST_ERROR,
	ST_STOPPED,
};

struct capture_session;

struct capture_host {
	struct capture_session *s;
	const char *target; /* points into s->req */
	char dir[CAPTURE_MAX_NAME + 1];
	char *file; /* store path, or NULL (continuous); owned */
	pthread_t thread;
	bool started;
	/* published under c->lock */
	int state;
	uint64_t bytes;
	int grpc_status; /* -1: none */
	char error[400];
	bool by_server;
	char *server_file; /* where an old server wrote it; owned */
	/* host thread only */
	struct xprofs_store_writer *w;
	uint64_t off;
};

struct capture_session {
	struct xprofs_capture *c;
	struct capture_session *next; /* in its run's history, oldest first */
	uint64_t id;
	char *run; /* store path of the run, "" = root; owned */
	char session[CAPTURE_MAX_NAME + 16];
	struct capture_req *req; /* owned */
	char *repo_root;         /* repository_root sent to the server; owned */
	uint64_t start_ts_ns;
	uint64_t deadline_ms;
	bool new_run;      /* the run's profile directory did not exist when it started */
	atomic_int cancel; /* set by free() after the grace period */
	int64_t started_ns, finished_ns;
	pthread_t coord;
	bool coord_started, joined;
	/* under c->lock */
	int state;
	bool done; /* coordinator finished; may be joined */
	bool stop_requested;
	bool finishing; /* hosts are done: no new stopper */
	bool stopper_started;
	pthread_t stopper;
	size_t n_hosts;
	struct capture_host hosts[];
};

/* The last CAPTURE_REJECTS refused lines of a control file, with reasons and times. */
#define CAPTURE_REJECTS 8
#define CAPTURE_REJECT_LINE_MAX 1024 /* bytes of a refused line kept */
struct capture_rejects {
	struct {
		char *line, *reason; /* owned */
		int64_t at_ns;       /* CLOCK_REALTIME */
	} e[CAPTURE_REJECTS];
	unsigned next, n; /* ring: e[next] is overwritten next */
};

struct capture_run {
	struct capture_run *next;
	char *run; /* owned */
	struct capture_session *head, *tail;
	size_t n;
	struct capture_session *running;
	struct capture_rejects rej;
	uint64_t touched; /* LRU for eviction */
};

struct xprofs_capture {
	struct xprofs_store *store; /* borrowed */
	xprofs_capture_notify_fn notify;
	void *arg;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* a session finished */
	/* protected by lock */
	struct capture_run *runs;
	size_t n_runs;
	uint64_t next_id, tick;
	size_t active_hosts;
	bool closing;
	struct capture_rejects rej; /* the top-level control file's */
	bool top_used;              /* a capture was ever submitted */
};

extern const char *const capture_state_names[]; /* indexed by enum capture_state */

/** capture_session_free() - frees @s (joined or never started); returns NULL. */
struct capture_session *capture_session_free(struct capture_session *s);
/** capture_run_find() - the record of @run (borrowed); with @create, made (evicting the oldest idle one). c->lock held. */
struct capture_run *capture_run_find(struct xprofs_capture *c, const char *run, bool create);
/** capture_reap() - joins finished coordinators and trims histories; c->lock held. */
void capture_reap(struct xprofs_capture *c);
/** capture_request_stop() - Terminate @s's hosts from a stopper thread; c->lock held. 0 or -errno. */
int capture_request_stop(struct capture_session *s);
/** capture_rejects_free() - frees the lines and reasons of @q. */
void capture_rejects_free(struct capture_rejects *q);
/**
 * capture_reject() - record that @line (@len bytes, borrowed; cut to
 * CAPTURE_REJECT_LINE_MAX) of the control file of @run (NULL: top-level)
 * was refused for the printf reason @fmt, also appended to @out (optional)
 * and logged. Takes c->lock.
 */
void capture_reject(struct xprofs_capture *c, const char *run, const char *line, size_t len,
		    struct xprofs_buf *out, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
/** capture_coord_main() - the coordinator thread of the session @arg. */
void *capture_coord_main(void *arg);

#endif
