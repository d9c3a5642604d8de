/* proto.h: the guest agent protocol, framed msgpack shared by host and guest.
 *
 * A frame is a 4-byte big-endian length N, then N bytes holding one msgpack
 * map. 0 < N <= AL_FRAME_MAX. Every map has `t`, the message type. The host
 * drives: it sends one request and reads frames until the final reply, so a
 * host that reconnects (after a snapshot restore) finds the guest idle.
 *
 *   request                                  reply
 *   hello                                    hello {v, agent, kernel, template}
 *   reseed {entropy: bin 32..512, time_ns}   ok
 *   setup {limits, entropy?, time_ns?}       ok {reseeded?}
 *   put_files {files: {path: str|bin}}       ok
 *   run_step {step, limits, stream,          out {fd, data}*, then
 *     warmup?, background?}                  exit {result}
 *   get_files {paths: [..], max_bytes}       files {files, missing: [..]}
 *   ping                                     pong
 *   signal {sig, grace_ms} (during run_step) (none)
 *   (any, on failure)                        error {msg}
 *
 * Versions. `v` in hello is AL_PROTO_VERSION; a field added later is
 * optional and ignored by an older peer (the decoders skip unknown keys),
 * so a host that relies on one needs the peer to acknowledge it:
 *   v2  setup may carry a reseed (entropy + time_ns, both or neither,
 *       the same bounds as reseed), applied before the limits: a warm
 *       clone's hand-off is then one round trip. The agent answers
 *       `ok {reseeded: true}`; a v1 agent answers a plain `ok` (it
 *       ignored the reseed), and the host must then send `reseed`
 *       before any step (sb__agent_client_setup_reseed says which).
 *   v2  `zygote {modules}` (a template's, before its snapshot): start a
 *       pre-initialized python3 that a job's first python3 step runs in
 *       (docs/zygote.md); an agent without it answers `error`, and the
 *       template is then saved without one.
 *   v3  `zygote {warm: true}` (a warm clone's, after its restore): the
 *       waiting zygote runs a job's paths in forks of itself, so that its
 *       own are translated before the job (docs/zygote.md, "Warm-up");
 *       `ok`, or `error` from an agent without it (the clone then serves
 *       as before, cold).
 *   v4  `signal {sig, grace_ms}`, sent by the host WHILE a run_step runs
 *       (the only request that is): the agent sends signal `sig` (one of
 *       al_signal_names) to every process of the step (its cgroup, else
 *       its process group) and, when grace_ms > 0 and the step's main
 *       process is still alive that long after, SIGKILLs the step. There
 *       is no reply: the step's `exit` is still the one reply to
 *       run_step, and a `signal` that arrives when no step runs is
 *       dropped unanswered (it raced the step's end). An agent older than
 *       v4 would read it only after the step and answer `error`, which
 *       the host would take as the reply to its next request: the host
 *       sends `signal` only to an agent whose hello said v >= 4
 *       (AL_PROTO_SIGNAL_V). (v3 was documented for zygote warm-ups while
 *       agents still said 2: the host never relied on it.)
 *   v5  `run_step {background: true}` (a session exec's, never a job
 *       step's): when the step's main process exits, what it left
 *       running in its cgroup is moved to the session-wide background
 *       cgroup (`job/bg`, with the step's memory and pids caps) instead
 *       of being killed, and the exec ends once its pipes' buffered
 *       bytes are drained; the agent then closes its read ends, so a
 *       background process still writing there gets EPIPE/SIGPIPE
 *       (docs/sessions.md, "Background processes"). `signal` still
 *       reaches only the running step's cgroup. An older agent skips the
 *       unknown key and kills what the step left, as for a job.
 *
 * Authentication (vsock only; see docs/vsock-auth.md). On a new vsock
 * connection the agent speaks first and nothing else is served until the
 * host has proved that it holds the VM's token (AL_AUTH_TOKEN_LEN random
 * bytes the host hands to QEMU as the fw_cfg file AL_AUTH_FW_CFG):
 *
 *   (agent, unasked)  challenge {nonce: bin 32}
 *   auth {mac: bin 32}                       ok, or the connection closes
 *
 * mac = HMAC-SHA256(token, AL_AUTH_LABEL || nonce) (al_auth_mac), checked
 * with al_auth_equal; the token itself never crosses the channel.
 *
 * Using it:
 *
 *  1. Reading: feed received bytes to a `struct al_frame_reader`; it checks
 *     the length prefix against its cap before it allocates anything, and
 *     grows the body buffer only as bytes arrive. al_frame_reader_want()
 *     says how many bytes finish the current frame, so a caller that reads
 *     at most that many never over-reads into the next frame.
 *  2. Decode a complete body with al_msg_decode() (al_frame_decode() takes
 *     prefix and body together). Decoding is bounded (al_mp_unpack), checks
 *     every field's type and size, and fills a `struct al_msg`; release it
 *     with al_msg_release().
 *  3. Encode with al_msg_encode(): it returns the whole frame, prefix
 *     included, ready to write.
 *
 * No I/O here. Errors: -EBADMSG malformed or wrong field, -EMSGSIZE over a
 * frame cap, -E2BIG over another cap, -ENOMEM.
 */
#ifndef AL_PROTO_H
#define AL_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "results.h"

/* Where the agent puts the eval check runner (sandbox/agent/check.py) at
 * boot; `airlock eval` jobs run it (docs/eval.md). */
#define AL_CHECK_DIR "/run/airlock-check"
#define AL_CHECK_PY  AL_CHECK_DIR "/check.py"
#define AL_CHECK_MOD AL_CHECK_DIR "/_airlock_check.py" /* what it imports */

#define AL_PROTO_VERSION    5u		/* `v` in hello; see "Versions" */
#define AL_PROTO_SIGNAL_V   4u		/* first `v` that takes `signal` */
#define AL_PROTO_BACKGROUND_V 5u	/* first `v` that takes `background` */
#define AL_SIGNAL_GRACE_MAX 60000u	/* grace_ms of `signal`, at most */
#define AL_FRAME_HDR	    4u		/* bytes of the length prefix */
#define AL_FRAME_MAX	    (40u << 20) /* largest frame body either side sends */
#define AL_PROTO_STR_MAX    256u	/* agent, kernel in hello */
#define AL_PROTO_OUT_MAX    (1u << 20) /* data in one `out` chunk */
#define AL_ENTROPY_MIN	    32u	       /* bytes of entropy in reseed */
#define AL_ENTROPY_MAX	    512u
#define AL_AGENT_VPORT	    "org.airlock.agent" /* virtio-serial port name */
#define AL_AGENT_VSOCK_PORT 1024u		/* AF_VSOCK port */
#define AL_SHA256_LEN	    32u			/* SHA-256 digest bytes */
#define AL_AUTH_TOKEN_LEN   32u			/* per-VM secret */
#define AL_AUTH_NONCE_LEN   32u			/* agent's challenge */
#define AL_AUTH_LABEL	    "airlock agent auth v1\n" /* mac prefix */
#define AL_AUTH_FW_CFG	    "opt/airlock/token" /* fw_cfg file name */

enum al_msg_type {
	AL_MSG_NONE = 0,
	AL_MSG_HELLO,	  /* request (no fields) and reply */
	AL_MSG_RESEED,	  /* request */
	AL_MSG_SETUP,	  /* request */
	AL_MSG_PUT_FILES, /* request */
	AL_MSG_RUN_STEP,  /* request */
	AL_MSG_GET_FILES, /* request */
	AL_MSG_PING,	  /* request */
	AL_MSG_OK,	  /* reply */
	AL_MSG_ERROR,	  /* reply */
	AL_MSG_OUT,	  /* streamed reply chunk */
	AL_MSG_EXIT,	  /* reply to run_step */
	AL_MSG_FILES,	  /* reply to get_files */
	AL_MSG_PONG,	  /* reply to ping */
	AL_MSG_CHALLENGE, /* agent, unasked, on a vsock connection */
	AL_MSG_AUTH,	  /* request: the answer to challenge */
	AL_MSG_ZYGOTE,	  /* request: start the zygote (docs/zygote.md) */
	AL_MSG_SIGNAL,	  /* v4, during run_step only: signal the step */
	AL_MSG_TYPE_COUNT
};

struct al_msg_hello {
	uint32_t v;	 /* protocol version; 0 in the request */
	char *agent;	 /* agent version */
	char *kernel;	 /* uname release */
	char *template_; /* airlock.template= from the kernel command line */
};

struct al_msg_reseed {
	struct al_blob entropy; /* AL_ENTROPY_MIN..AL_ENTROPY_MAX bytes */
	uint64_t time_ns;	/* CLOCK_REALTIME to set, ns since the epoch */
};

struct al_msg_setup {
	struct al_limits limits; /* job-wide limits */
	struct al_blob entropy;	 /* v2, optional: a reseed's entropy (data
				  * NULL = none), mixed in before the limits */
	uint64_t time_ns;	 /* v2, with entropy: CLOCK_REALTIME to set */
};

struct al_msg_ok {
	bool reseeded; /* v2, reply to setup: its reseed was applied */
};

struct al_msg_files {
	struct al_file *files; /* put_files: to write; files: read back */
	size_t n_files;	       /* entries in files */
	char **missing;	       /* files reply: paths not returned */
	size_t n_missing;      /* entries in missing */
};

struct al_msg_run_step {
	struct al_step step;	 /* the step to run */
	struct al_limits limits; /* limits for this step */
	bool stream;		 /* send `out` chunks while it runs */
	bool warmup;		 /* v2: a warm clone's warm-up (trusted):
				  * leaves the zygote be (zygote.c) */
	bool background;	 /* v5: a session exec: what the step left
				  * running survives it (see "Versions") */
};

struct al_msg_out {
	uint32_t fd;	     /* 1 stdout, 2 stderr */
	struct al_blob data; /* 1..AL_PROTO_OUT_MAX bytes */
};

struct al_msg_exit {
	struct al_step_result result; /* how the step ended */
};

struct al_msg_get_files {
	char **paths;	    /* relative to the work dir */
	size_t n_paths;	    /* entries in paths, at most AL_COLLECT_MAX */
	uint64_t max_bytes; /* file bytes the reply may carry in all */
};

struct al_msg_challenge {
	struct al_blob nonce; /* AL_AUTH_NONCE_LEN bytes */
};

struct al_msg_auth {
	struct al_blob mac; /* AL_SHA256_LEN bytes, al_auth_mac() */
};

struct al_msg_error {
	char *msg; /* human text, at most AL_ERROR_MAX bytes */
};

#define AL_ZYGOTE_MODULES_MAX 1024u /* bytes of zygote.modules */

struct al_msg_zygote {
	char *modules; /* Python modules it imports, space-separated */
	bool warm;     /* instead: warm the waiting one up (a warm clone's) */
};

struct al_msg_signal {
	uint32_t sig;	   /* signal number, al_step_signal_ok() */
	uint32_t grace_ms; /* then SIGKILL the step after this; 0 = never */
};

struct al_msg {
	enum al_msg_type type; /* which member of u is used */
	union {
		struct al_msg_hello hello;
		struct al_msg_reseed reseed;
		struct al_msg_setup setup;
		struct al_msg_ok ok;
		struct al_msg_files files; /* put_files and files */
		struct al_msg_run_step run_step;
		struct al_msg_out out;
		struct al_msg_exit exit;
		struct al_msg_get_files get_files;
		struct al_msg_error error;
		struct al_msg_challenge challenge;
		struct al_msg_auth auth;
		struct al_msg_zygote zygote;
		struct al_msg_signal signal;
	} u;
};

/* The signals a step may be sent (`signal`): TERM, KILL, INT, HUP, QUIT,
 * USR1, USR2. al_step_signal_number() gives the number of such a name
 * ("SIG" prefix and lower case accepted), 0 when it is not one of them;
 * al_step_signal_ok() says whether a number is, al_step_signal_name()
 * its name ("TERM"; NULL when it is not one). Nothing else passes: no
 * STOP (a stopped step would hold the session until its timeout), no
 * real-time signals. (al_signal_name, results.h, names any number.) */
int al_step_signal_number(const char *name);
bool al_step_signal_ok(int sig);
const char *al_step_signal_name(int sig);

/* "hello", "run_step", ...; NULL for an unknown type. */
const char *al_msg_type_name(enum al_msg_type t);

/* Encode `m` as one frame (prefix + body) into *ret (malloc'd). Returns 0,
 * -EINVAL (a required field is missing), -EMSGSIZE (over AL_FRAME_MAX) or
 * -ENOMEM. */
int al_msg_encode(const struct al_msg *m, char **ret, size_t *ret_len);

/* Decode one frame body. On success fills *ret (release it) and returns 0;
 * otherwise *ret is left zeroed and, when `d` is given, it says why. */
int al_msg_decode(const void *body, size_t len, struct al_msg *ret,
		  struct al_diags *d);

/* Decode one whole frame: prefix, then exactly the body it announces. */
int al_frame_decode(const void *frame, size_t len, struct al_msg *ret,
		    struct al_diags *d);

/* Free what `m` holds and zero it; accepts a zeroed struct. */
void al_msg_release(struct al_msg *m);

/* Read the big-endian length prefix at `p`. */
uint32_t al_frame_len(const uint8_t p[AL_FRAME_HDR]);

/* --- authentication (auth.c) ------------------------------------------- */

/* SHA-256 and HMAC-SHA256 (RFC 2104) of a message. */
void al_sha256(const void *data, size_t len, uint8_t out[AL_SHA256_LEN]);
void al_hmac_sha256(const void *key, size_t key_len, const void *msg,
		    size_t msg_len, uint8_t out[AL_SHA256_LEN]);

/* The host's answer to `nonce`: HMAC-SHA256(token, AL_AUTH_LABEL || nonce). */
void al_auth_mac(const uint8_t token[AL_AUTH_TOKEN_LEN],
		 const uint8_t nonce[AL_AUTH_NONCE_LEN],
		 uint8_t ret[AL_SHA256_LEN]);

/* a == b over len bytes, in time that depends on len only. */
bool al_auth_equal(const void *a, const void *b, size_t len);

/* --- incremental frame reader -------------------------------------------- */

struct al_frame_reader {
	uint8_t hdr[AL_FRAME_HDR]; /* length prefix being read */
	size_t hdr_got;		   /* bytes of hdr received */
	uint32_t need;		   /* body length, valid once hdr is complete */
	uint8_t *body;		   /* body buffer, grows as bytes arrive */
	size_t cap;		   /* bytes allocated in body */
	size_t got;		   /* body bytes received */
	uint32_t max;		   /* largest body accepted */
};

/* Start empty; `max` caps the body (0 = AL_FRAME_MAX); a result frame
 * (worker to dispatcher) may be up to AL_RESULT_MAX_BYTES. */
void al_frame_reader_init(struct al_frame_reader *r, uint32_t max);

/* Consume bytes from buf; stops at the end of a frame. Returns the count
 * consumed (>= 0), -EMSGSIZE for a length of 0 or over the cap (the reader
 * is then unusable until reset) or -ENOMEM. */
long al_frame_reader_feed(struct al_frame_reader *r, const void *buf,
			  size_t len);

/* Bytes still needed to complete the current frame (at least 1); never
 * more than the current part (prefix or body) needs. */
size_t al_frame_reader_want(const struct al_frame_reader *r);

/* A complete frame is waiting to be taken. */
bool al_frame_reader_ready(const struct al_frame_reader *r);

/* Hand the complete body over (caller frees) and start the next frame.
 * Returns 0 or -EAGAIN when no frame is complete. */
int al_frame_reader_take(struct al_frame_reader *r, uint8_t **ret_body,
			 size_t *ret_len);

/* Drop any partial frame (e.g. the peer reconnected). */
void al_frame_reader_reset(struct al_frame_reader *r);

/* Free the buffer; the reader may be reused after init. */
void al_frame_reader_release(struct al_frame_reader *r);

#endif
