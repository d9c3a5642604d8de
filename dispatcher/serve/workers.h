/* workers.h: internal to dispatcher/serve/, what serve.c (the loop) and
 * workers.c (its worker processes) share, and no other file: the constants, the
 * task, partition and worker-slot structs, the loop's state, and the seam
 * between the two files (struct serve_worker_ops up, serve__* down).
 * serve.c's opening comment is the theory of operation. */
#ifndef AL_WORKERS_H
#define AL_WORKERS_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "conn.h"
#include "proc.h"
#include "proto.h"
#include "queue.h"
#include "serve.h"
#include "snapdef.h"

#define TICK_MS		250u
#define BLOCK_MS	1000u
#define RELEASE_IDLE_MS "31536000000" /* a year: reclaimable at once */
#define HB_BATCH	256u	      /* entries per HEARTBEAT call */
#define RESPAWN_MIN_MS	200u
#define RESPAWN_MAX_MS	10000u
#define READ_BUF	(64u << 10)
#define SNAP_CACHE	8u /* definitions kept (snapdef_cb) */

enum task_state {
	T_FETCH = 0,  /* payload being fetched */
	T_FETCH_WAIT, /* fetch again once Redis is back */
	T_QUEUED,     /* waiting for a worker */
	T_RUNNING,    /* a worker has it */
	T_STORING,    /* COMPLETE in flight */
	T_STORE_WAIT, /* store again once Redis is back */
};

struct serve_state;

/* One partition of the queue (queue.h): its own slot, so its own
 * connections (a Cluster node each), consumer group and timers' state. */
struct part {
	struct serve_state *s;		 /* owner */
	unsigned index;			 /* partition number */
	char q[ALQ_PART_NAME_MAX];	 /* its queue name */
	struct alq_conn cmd, blk;	 /* commands; blocking reads */
	bool group_ready;		 /* consumer group exists */
	bool group_pending;		 /* XGROUP CREATE in flight */
	bool reading;			 /* XREADGROUP in flight */
	bool reclaiming;		 /* RECLAIM in flight */
	unsigned asked;			 /* entries its read may bring */
	unsigned reclaim_n;		 /* entries its reclaim may bring */
	char cmd_name[16], blk_name[24]; /* the connections' names (logs) */
	char k_jobs[ALQ_KEY_MAX], k_dead[ALQ_KEY_MAX], k_cancel[ALQ_KEY_MAX];
};

struct task {
	struct task *prev, *next; /* in serve.tasks */
	struct serve_state *s;	  /* owner */
	struct part *p;		  /* its partition */
	enum task_state state;	  /* see above */
	struct alq_entry e;	  /* the stream entry */
	char id[AL_ID_MAX + 1];	  /* result id: job id or entry-SID */
	char *payload;		  /* the job's msgpack */
	size_t len;		  /* bytes of payload */
	uint32_t wall_ms;	  /* effective wall limit */
	char *result;		  /* result msgpack to store */
	size_t result_len;	  /* bytes of result */
	char status[4];		  /* its status, for the log */
	uint64_t run_ms;	  /* result's timing.run_ms, for metrics */
	uint64_t restore_ms;	  /* result's vm.restore_ms, for metrics */
	char reason[200];	  /* dead-letter reason, "" = none */
	bool cancelled;		  /* `airlock cancel`: its worker was killed */
	char digest[AL_DIGEST_HEX + 1];	 /* of the payload, "" = not fetched */
	struct al_snapdef *snap;	 /* the published definition of the
					  * snapshot it names, NULL = none */
	char *snap_setup;		 /* snap's setup bytes */
	char snap_name[AL_NAME_MAX + 1]; /* the snapshot it names, "" = none */
	uint32_t build_ms; /* more time its worker may take: building
			    * the snapshot from snap */
};

struct wslot {
	struct serve_state *s;	    /* owner */
	unsigned index;		    /* slot number */
	char name[AL_NAME_MAX + 1]; /* `worker` in results */
	struct al_proc proc;	    /* pid, socket, pidfd */
	uv_pipe_t pipe;		    /* the socket */
	uv_poll_t poll;		    /* the pidfd */
	unsigned open_handles;	    /* pipe/poll not yet closed */
	bool alive;		    /* process not yet reaped */
	bool reading;		    /* pipe readable and wanted */
	struct task *task;	    /* the job it runs, NULL = idle */
	uint64_t deadline;	    /* kill it past this (loop ms) */
	uint64_t respawn_at;	    /* loop ms, 0 = not waiting */
	uint32_t backoff_ms;	    /* next respawn delay */
	uint64_t started;	    /* loop ms at spawn */
	struct al_frame_reader fr;  /* result frame being read */
	char *rbuf;		    /* read buffer */
};

/* The seam between the loop (serve.c) and its worker processes
 * (workers.c): what a worker slot reports up, set once by setup(). The
 * worker side never calls the loop's functions by name, so the two
 * files call one way. */
struct serve_worker_ops {
	/* a result frame from w's worker (body is the callee's) */
	void (*result)(struct wslot *w, uint8_t *body, size_t len);
	/* w's worker was reaped; w->task is the job it ran, if any */
	void (*died)(struct wslot *w, const char *why);
	/* after a worker event: hand out jobs, read more, maybe finish */
	void (*turn)(struct serve_state *s);
	/* a handle of w closed: the loop may be done */
	void (*closed)(struct serve_state *s);
};

struct serve_state {
	const struct al_serve_opts *o;
	struct serve_worker_ops ops; /* workers.c's calls up */
	uv_loop_t loop;
	struct part *p;			      /* partitions, p[0] = the queue */
	unsigned n_p;			      /* entries in p */
	unsigned next_read;		      /* partition to read first */
	unsigned next_reclaim;		      /* partition to reclaim first */
	unsigned empty_reads;		      /* reads in a row with no entry */
	uv_timer_t tick, hb, reclaim, trim;   /* timers */
	uv_signal_t sigterm, sigint;	      /* shutdown */
	uv_poll_t stop;			      /* o->stop_fd */
	bool stop_open;			      /* stop handle initialised */
	struct wslot *w;		      /* worker slots */
	unsigned n_w;			      /* entries in w */
	struct task tasks;		      /* list head */
	unsigned n_tasks;		      /* entries in tasks */
	bool draining;			      /* shutdown begun */
	bool closing;			      /* handles being closed */
	uint64_t drain_deadline;	      /* loop ms */
	char consumer[AL_NAME_MAX + 1];	      /* our consumer name */
	char k_serves[ALQ_KEY_MAX];	      /* partition 0's */
	char snap_host[ALQ_SNAPDEF_HOST_MAX]; /* this host in snaphosts */
	struct {
		struct al_snapdef d; /* a definition read, d.name[0]
				      * = free slot */
		char *setup;	     /* its setup bytes */
		uint32_t build_ms;   /* its build allowance */
	} snapc[SNAP_CACHE];	     /* the last ones read, by name:
				      * a job costs an HGET of the key
				      * while it is unchanged */
	unsigned snapc_next;	     /* slot to replace next */
	uint64_t stored, rejected, retried, dead; /* counters for the log */
};

/* Worker processes (the worker side of the seam). */
int serve__spawn(struct wslot *w);
int serve__send_job(struct wslot *w, struct task *t);
void serve__stop_worker(struct wslot *w);
void serve__sweep(struct serve_state *s, const char *when, bool always);

static inline uint64_t mono(struct serve_state *s)
{
	return uv_now(&s->loop);
}

#endif
