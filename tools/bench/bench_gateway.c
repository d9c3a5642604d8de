/* bench_gateway.c: requests a second the package gateway serves.
 *
 *   airlock-bench-gateway ADDR:PORT PATH [THREADS] [SECONDS]
 *
 * THREADS (default 4) keep-alive HTTP/1.1 connections each ask for PATH
 * (a project page, a wheel, a metadata file) as fast as they are
 * answered for SECONDS (default 5), after a 0.5 s warm-up. Prints the
 * requests a second, the bytes a second and the latency p50 / p99 / max in
 * ms. A response other than 200 stops the run (it measures serving, not
 * refusing). docs/performance.md has the figures and the command lines.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define LAT_MAX (1u << 20)

struct worker {
	struct sockaddr_in sin;
	const char *path;
	double until, measure_from; /* CLOCK_MONOTONIC seconds */
	uint64_t requests, bytes;   /* measured ones */
	double *lat;		    /* ms, one per measured request */
	size_t n_lat;
	int err;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One response: headers, Content-Length, the body. Returns its status
 * and adds its bytes, or -1. */
static int response(int fd, char *buf, size_t size, uint64_t *bytes)
{
	size_t have = 0, need;
	char *end = NULL, *cl;
	ssize_t r;
	int status;

	while (!end) {
		if (have == size - 1)
			return -1;
		r = read(fd, buf + have, size - 1 - have);
		if (r <= 0)
			return -1;
		have += (size_t)r;
		buf[have] = '\0';
		end = strstr(buf, "\r\n\r\n");
	}
	if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
		return -1;
	cl = strcasestr(buf, "\r\nContent-Length:");
	need = cl ? strtoul(cl + 17, NULL, 10) : 0;
	need += (size_t)(end + 4 - buf);
	*bytes += need;
	while (have < need) {
		size_t want = need - have < size ? need - have : size;

		r = read(fd, buf, want);
		if (r <= 0)
			return -1;
		have += (size_t)r;
	}
	return status;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	char req[1024], *buf = malloc(1 << 20);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	int len = snprintf(req, sizeof(req),
			   "GET %s HTTP/1.1\r\nHost: bench\r\n"
			   "User-Agent: airlock-bench\r\n\r\n",
			   w->path);

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (!buf || fd < 0 ||
	    connect(fd, (struct sockaddr *)&w->sin, sizeof(w->sin)) < 0) {
		w->err = errno ? errno : ENOMEM;
		goto out;
	}
	for (;;) {
		double t0 = now(), t1;
		uint64_t bytes = 0;
		int status;

		if (t0 >= w->until)
			break;
		if (write(fd, req, (size_t)len) != len ||
		    (status = response(fd, buf, 1 << 20, &bytes)) < 0) {
			w->err = EPROTO;
			break;
		}
		if (status != 200) {
			fprintf(stderr, "bench: %s answered %d\n", w->path,
				status);
			w->err = EINVAL;
			break;
		}
		t1 = now();
		if (t0 >= w->measure_from) {
			w->requests++;
			w->bytes += bytes;
			if (w->n_lat < LAT_MAX)
				w->lat[w->n_lat++] = (t1 - t0) * 1000;
		}
	}
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	unsigned threads = argc > 3 ? (unsigned)atoi(argv[3]) : 4;
	double secs = argc > 4 ? atof(argv[4]) : 5, start;
	struct worker *w;
	pthread_t *tid;
	uint64_t reqs = 0, bytes = 0;
	double *all;
	size_t n = 0;
	char host[64];
	const char *colon;

	if (argc < 3 || !(colon = strrchr(argv[1], ':')) || threads < 1 ||
	    threads > 64 || secs <= 0 ||
	    (size_t)(colon - argv[1]) >= sizeof(host)) {
		fprintf(stderr, "usage: airlock-bench-gateway ADDR:PORT PATH "
				"[THREADS] [SECONDS]\n");
		return 2;
	}
	memcpy(host, argv[1], (size_t)(colon - argv[1]));
	host[colon - argv[1]] = '\0';
	if (inet_pton(AF_INET, host, &sin.sin_addr) != 1)
		return 2;
	sin.sin_port = htons((uint16_t)atoi(colon + 1));
	w = calloc(threads, sizeof(*w));
	tid = calloc(threads, sizeof(*tid));
	all = malloc(sizeof(double) * LAT_MAX);
	if (!w || !tid || !all)
		return 1;
	start = now();
	for (unsigned i = 0; i < threads; i++) {
		w[i] = (struct worker){.sin = sin,
				       .path = argv[2],
				       .measure_from = start + 0.5,
				       .until = start + 0.5 + secs,
				       .lat = malloc(sizeof(double) * LAT_MAX)};
		if (!w[i].lat || pthread_create(&tid[i], NULL, run, &w[i]))
			return 1;
	}
	for (unsigned i = 0; i < threads; i++) {
		pthread_join(tid[i], NULL);
		if (w[i].err) {
			fprintf(stderr, "bench: thread %u: %s\n", i,
				strerror(w[i].err));
			return 1;
		}
		reqs += w[i].requests;
		bytes += w[i].bytes;
		for (size_t k = 0; k < w[i].n_lat && n < LAT_MAX; k++)
			all[n++] = w[i].lat[k];
		free(w[i].lat);
	}
	qsort(all, n, sizeof(double), cmp);
	printf(
	    "%s %s threads=%u: %.0f requests/s, %.1f MB/s, latency ms p50 %.2f "
	    "p99 %.2f max %.2f\n",
	    argv[1], argv[2], threads, (double)reqs / secs,
	    (double)bytes / secs / 1e6, n ? all[n / 2] : 0,
	    n ? all[n * 99 / 100] : 0, n ? all[n - 1] : 0);
	free(all);
	free(w);
	free(tid);
	return 0;
}
