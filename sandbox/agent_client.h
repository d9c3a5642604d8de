/* agent_client.h: the host side of the guest agent protocol.
 *
 * Every byte from the guest is hostile: replies are read with a deadline,
 * frames are capped before anything is allocated, decoded with bounds, and
 * anything but the expected reply type fails the call. The guest's `error`
 * text is kept escaped and truncated in `error` for the caller to log.
 *
 * Using it:
 *
 *  1. Connect a stream to the guest (QEMU's virtio-serial chardev socket,
 *     a vsock, or a socketpair in tests) and sb__agent_client_init() on it.
 *     The fd stays the caller's; it may be blocking or not.
 *     On vsock, sb__agent_client_auth() must come first (proto.h).
 *  2. Call sb__agent_client_hello() first, then reseed, setup, put_files,
 *     run_step (as often as there are steps), get_files; reseed and setup
 *     may be one call (sb__agent_client_setup_reseed). Each call sends one
 *     request and waits at most `timeout_ms` for its reply.
 *  3. A call that fails with anything but -EPROTO (the guest answered
 *     `error`) leaves the stream in an unknown state: the client is then
 *     `broken` and every later call fails with -EPIPE. Destroy the VM.
 *  4. sb__agent_client_release() frees the reader; it does not close fd.
 *
 * Errors: -ETIMEDOUT, -EPIPE (closed or broken), -EPROTO (guest `error` or
 * an unexpected reply), -EBADMSG (malformed reply), -EMSGSIZE (frame or
 * files over the cap), -ENOMEM, or another -errno from the socket.
 */
#ifndef AL_AGENT_CLIENT_H
#define AL_AGENT_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define AL_AGENT_CLIENT_ERROR_MAX 200 /* kept bytes of a guest error */

struct sb__agent_client {
	int fd;			   /* connected stream to the agent */
	bool broken;		   /* stream state unknown: stop using it */
	struct al_frame_reader rd; /* reply being read */
	uint32_t v;		   /* the agent's hello `v`, 0 = not asked */
	char error[AL_AGENT_CLIENT_ERROR_MAX +
		   1]; /* last guest error, escaped */
};

/* Streamed output while a step runs; `fd` is 1 or 2. */
typedef void (*al_agent_out_fn)(void *opaque, int fd, const uint8_t *data,
				size_t len);

void sb__agent_client_init(struct sb__agent_client *c, int fd);
void sb__agent_client_release(struct sb__agent_client *c);

/* hello: *ret gets the agent's facts (sb__agent_client_hello_release). */
int sb__agent_client_hello(struct sb__agent_client *c, int timeout_ms,
			   struct al_msg_hello *ret);
void sb__agent_client_hello_release(struct al_msg_hello *h);
/* Fresh entropy (AL_ENTROPY_MIN..MAX bytes) and the wall clock. */
int sb__agent_client_reseed(struct sb__agent_client *c, const void *entropy,
			    size_t len, uint64_t time_ns, int timeout_ms);
int sb__agent_client_setup(struct sb__agent_client *c,
			   const struct al_limits *limits, int timeout_ms);
/* setup and reseed in one round trip (proto v2): the agent mixes in the
 * entropy and sets the clock, then applies the limits. *reseeded false
 * after a 0 return means a v1 agent took the limits but ignored the
 * reseed: send sb__agent_client_reseed before any step. */
int sb__agent_client_setup_reseed(struct sb__agent_client *c,
				  const struct al_limits *limits,
				  const void *entropy, size_t len,
				  uint64_t time_ns, int timeout_ms,
				  bool *reseeded);
int sb__agent_client_put_files(struct sb__agent_client *c,
			       const struct al_file *files, size_t n,
			       int timeout_ms);
/* Run one step; `out` (may be NULL) sees output as it is produced, at
 * most limits->output_bytes per stream. On success *ret holds the result
 * (al_step_result_release it), each stream cut to output_bytes by the
 * host whatever the guest sent: a cut stream is truncated and the step OL. */
int sb__agent_client_run_step(struct sb__agent_client *c,
			      const struct al_step *step,
			      const struct al_limits *limits,
			      al_agent_out_fn out, void *opaque, int timeout_ms,
			      struct al_step_result *ret);
/* While a step runs (sb__agent_client_run_step_ctl): called at least
 * every AL_AGENT_TICK_MS; returns 1 with a signal to send the step in
 * *sig / *grace_ms (proto v4 `signal`), or 0. */
#define AL_AGENT_TICK_MS 100
typedef int (*al_agent_tick_fn)(void *opaque, uint32_t *sig,
				uint32_t *grace_ms);
/* How a caller steers a running step (sb__agent_client_run_step_ctl). A
 * signal from `tick` is sent only when the agent said v >=
 * AL_PROTO_SIGNAL_V in hello (sb__agent_client_hello sets c->v); for an
 * older agent (or one never asked) it is dropped and the step runs on:
 * callers check c->v first and say so. `background` (a session exec's,
 * proto v5): what the step leaves running survives it; an older agent
 * kills it as for a job step. */
struct sb__step_ctl {
	al_agent_out_fn out;   /* sees output as it comes; may be NULL */
	void *opaque;          /* passed to out */
	al_agent_tick_fn tick; /* may be NULL */
	void *tick_opaque;     /* passed to tick */
	bool background;       /* the step's leftovers outlive it */
};
/* run_step, watched and steered by `ctl` (NULL: no output callback, no
 * tick, not background). */
int sb__agent_client_run_step_ctl(struct sb__agent_client *c,
				  const struct al_step *step,
				  const struct al_limits *limits,
				  const struct sb__step_ctl *ctl, int timeout_ms,
				  struct al_step_result *ret);
/* Bring files back; *ret holds files and missing paths (free with
 * sb__agent_client_files_release). Returns the count of files dropped
 * from the reply because they were not in `paths` (or came twice), or
 * -EMSGSIZE (and nothing) when the rest hold more than max_bytes. */
int sb__agent_client_get_files(struct sb__agent_client *c, char *const *paths,
			       size_t n, uint64_t max_bytes, int timeout_ms,
			       struct al_msg_files *ret);
void sb__agent_client_files_release(struct al_msg_files *f);
int sb__agent_client_ping(struct sb__agent_client *c, int timeout_ms);
/* run_step for a warm clone's warm-up, the template's own command: the
 * agent runs it beside its zygote, which it neither uses nor ends. */
int sb__agent_client_run_warmup(struct sb__agent_client *c,
				const struct al_step *step,
				const struct al_limits *limits, int timeout_ms,
				struct al_step_result *ret);

/* Start the agent's zygote, a python3 that imports `modules` (space-
 * separated) and waits for a job's first python3 step (docs/zygote.md);
 * returns once it is ready. -EPROTO: the agent could not (its error). */
int sb__agent_client_zygote(struct sb__agent_client *c, const char *modules,
			    int timeout_ms);
/* A warm clone's: have the waiting zygote run a job's paths in forks of
 * itself (docs/zygote.md, "Warm-up"). -EPROTO: the agent could not (an
 * older agent, or the zygote ended; the clone still serves, cold). */
int sb__agent_client_zygote_warm(struct sb__agent_client *c, int timeout_ms);
/* vsock only, before anything else: answer the agent's challenge with
 * the VM's token (never sent itself). 0 once the agent took it; a refused
 * or failed proof leaves the client broken (the agent closed the stream). */
int sb__agent_client_auth(struct sb__agent_client *c,
			  const uint8_t token[AL_AUTH_TOKEN_LEN],
			  int timeout_ms);

#endif
