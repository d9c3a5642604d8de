/* workers.c: the dispatcher's worker processes (workers.h): spawn
 * one, write it a job frame, read its result frames, reap it when it
 * dies, stop it on drain, and sweep what its VMs left. What a worker
 * reports goes up through the loop's struct serve_worker_ops; this file
 * never calls serve.c by name.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "metrics.h"
#include "workers.h"

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct wslot *w = h->data;

	(void)suggested;
	*buf = uv_buf_init(w->rbuf, READ_BUF);
}

static void read_cb(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
	struct wslot *w = st->data;
	struct serve_state *s = w->s;
	size_t off = 0;

	if (n < 0) {
		/* EOF or error: it is dying; the pidfd tells us when */
		uv_read_stop(st);
		w->reading = false;
		return;
	}
	while (off < (size_t)n) {
		long used = al_frame_reader_feed(&w->fr, buf->base + off,
						 (size_t)n - off);
		uint8_t *body;
		size_t len;

		if (used < 0) {
			al_err("worker=%u: bad result frame (%s); killing it",
			       w->index, strerror((int)-used));
			kill(-w->proc.pid, SIGKILL);
			uv_read_stop(st);
			w->reading = false;
			return;
		}
		off += (size_t)used;
		if (al_frame_reader_ready(&w->fr) &&
		    al_frame_reader_take(&w->fr, &body, &len) == 0)
			s->ops.result(w, body, len);
	}
	s->ops.turn(s);
}

static void write_cb(uv_write_t *req, int status)
{
	free(req->data);
	free(req);
	(void)status; /* a failed write means the worker died: pidfd says */
}

int serve__send_job(struct wslot *w, struct task *t)
{
	struct al_proc_job pj = {
	    .payload = t->payload, .len = t->len, .attempt = t->e.deliveries};
	uint64_t now = al_wall_ms();
	uv_write_t *req;
	uv_buf_t b;
	char *frame;
	size_t len;
	int r;

	if (t->snap)
		pj.snap = *t->snap; /* its setup is t's until t is freed */

	if (t->e.submit_ms && t->e.submit_ms <= now)
		pj.queued_ms = now - t->e.submit_ms;
	r = al_proc_job_frame(&pj, &frame, &len);
	if (r < 0)
		return r;
	req = malloc(sizeof(*req));
	if (!req) {
		free(frame);
		return -ENOMEM;
	}
	req->data = frame;
	b = uv_buf_init(frame, (unsigned)len);
	r = uv_write(req, (uv_stream_t *)&w->pipe, &b, 1, write_cb);
	if (r < 0) {
		free(frame);
		free(req);
	}
	return r;
}

static void handle_closed(uv_handle_t *h)
{
	struct wslot *w = h->data;

	if (h == (uv_handle_t *)&w->poll && w->proc.pidfd >= 0) {
		close(w->proc.pidfd);
		w->proc.pidfd = -1;
	}
	w->open_handles--;
	w->s->ops.closed(w->s);
}

/* What VMs of dead workers left (sandbox/sweep.c); `always` logs even
 * when nothing was left (start-up). Blocks for at most a few seconds. */
void serve__sweep(struct serve_state *s, const char *when, bool always)
{
	struct sb_sweep_stats st;
	int r = sb_sweep(s->o->sb, &st);

	if (r < 0)
		al_warn("sweep %s: run dir %s: %s", when, s->o->sb->run_dir,
			r == -EPERM ? "not ours alone (owner or mode): left "
				      "alone"
				    : strerror(-r));
	if (always || st.dirs || st.cgroups || st.killed || st.links)
		al_info("sweep %s: removed %u run dirs and %u cgroups of dead "
			"workers and %u network links, killed %u processes",
			when, st.dirs, st.cgroups, st.links, st.killed);
}

static void on_exit_(uv_poll_t *p, int status, int events)
{
	struct wslot *w = p->data;
	struct serve_state *s = w->s;
	siginfo_t si = {0};
	char why[96];
	int st = 0;

	(void)status;
	(void)events;
	/* peek first: the group must be killed while the pid cannot be
	 * reused, i.e. before the worker is reaped */
	if (waitid(P_PID, (id_t)w->proc.pid, &si, WEXITED | WNOHANG | WNOWAIT) <
		0 ||
	    si.si_pid != w->proc.pid)
		return; /* spurious */
	/* its QEMU and pre-started VMMs die by PDEATHSIG; the group too */
	kill(-w->proc.pid, SIGKILL);
	while (waitpid(w->proc.pid, &st, 0) < 0 && errno == EINTR)
		;
	w->alive = false;
	if (WIFSIGNALED(st))
		snprintf(why, sizeof(why), "worker process killed by signal %d",
			 WTERMSIG(st));
	else
		snprintf(why, sizeof(why), "worker process exited with %d",
			 WEXITSTATUS(st));
	if (w->task || !s->draining)
		al_warn("worker=%u pid=%d: %s%s", w->index, (int)w->proc.pid,
			why, w->task ? " mid-job" : "");
	if (!s->draining && s->o->metrics)
		atomic_fetch_add(&s->o->metrics->worker_restarts, 1);
	w->proc.pid = -1;
	serve__sweep(s, "after a worker died", false);
	uv_poll_stop(p);
	uv_close((uv_handle_t *)&w->poll, handle_closed);
	if (!uv_is_closing((uv_handle_t *)&w->pipe))
		uv_close((uv_handle_t *)&w->pipe, handle_closed);
	w->reading = false;
	s->ops.died(w, why);
	if (!s->draining) {
		/* a worker that dies young backs off; one that served resets */
		if (mono(s) - w->started > 60000)
			w->backoff_ms = RESPAWN_MIN_MS;
		w->respawn_at = mono(s) + w->backoff_ms;
		w->backoff_ms = w->backoff_ms * 2 > RESPAWN_MAX_MS
				    ? RESPAWN_MAX_MS
				    : w->backoff_ms * 2;
	}
	s->ops.turn(s);
}

int serve__spawn(struct wslot *w)
{
	struct serve_state *s = w->s;
	int r;

	r = al_proc_spawn(s->o->sb, s->o->policy, w->name, s->o->run, &w->proc);
	if (r < 0)
		return r;
	uv_pipe_init(&s->loop, &w->pipe, 0);
	w->pipe.data = w;
	uv_poll_init(&s->loop, &w->poll, w->proc.pidfd);
	w->poll.data = w;
	w->open_handles = 2;
	r = uv_pipe_open(&w->pipe, w->proc.fd);
	if (r == 0) {
		w->proc.fd = -1; /* the pipe owns it now */
		r = uv_read_start((uv_stream_t *)&w->pipe, alloc_cb, read_cb);
	}
	if (r == 0)
		r = uv_poll_start(&w->poll, UV_READABLE, on_exit_);
	w->alive = true;
	w->started = mono(s);
	w->respawn_at = 0;
	al_frame_reader_reset(&w->fr);
	if (r < 0) {
		al_err("worker=%u: %s; killing it", w->index, uv_strerror(r));
		kill(-w->proc.pid, SIGKILL);
		uv_poll_start(&w->poll, UV_READABLE, on_exit_);
		return 0; /* on_exit_ reaps it and schedules a respawn */
	}
	w->reading = true;
	al_info("worker=%u pid=%d: started", w->index, (int)w->proc.pid);
	return 0;
}

void serve__stop_worker(struct wslot *w)
{
	if (w->alive && w->reading) {
		uv_read_stop((uv_stream_t *)&w->pipe);
		w->reading = false;
	}
	/* closing its socket tells an idle worker to exit */
	if (w->alive && !uv_is_closing((uv_handle_t *)&w->pipe))
		uv_close((uv_handle_t *)&w->pipe, handle_closed);
}
