/* pkglist.c: a job's installs from the gateway's audit file (pkglist.h).
 *
 * The file is appended to by the gateway, whose uid is assumed
 * compromised (docs/packages.md, "The gateway as a second wall"): what is
 * read is capped (AL_PKGLIST_READ_MAX, a record at GW_AUDIT_LINE_MAX),
 * every line goes through the audit parser the gateway's fuzz target
 * covers (gw_audit_parse), and what a record could lie about is only
 * which allowed files this job was served.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "pkglist.h"

static void audit_path(const char *state_dir, char *buf, size_t len)
{
	snprintf(buf, len, "%s/packages/audit.jsonl", state_dir);
}

off_t al_pkglist_mark(const char *state_dir)
{
	char path[4200];
	struct stat st;

	audit_path(state_dir, path, sizeof(path));
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) ? st.st_size : 0;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

static void add(struct al_net_info *n, const struct gw_audit *a)
{
	char s[AL_NET_PACKAGE_MAX + 1];
	int len = snprintf(s, sizeof(s), "%s:%s==%s", gw_eco_name(a->eco),
			   a->name, a->version);

	if (len < 0 || (size_t)len >= sizeof(s))
		return;
	for (size_t i = 0; i < n->n_packages; i++)
		if (!strcmp(n->packages[i], s))
			return;
	if (n->n_packages < AL_NET_PACKAGES_MAX)
		memcpy(n->packages[n->n_packages++], s, (size_t)len + 1);
}

void al_pkglist_scan(const char *buf, size_t len, const char *job,
		     struct al_net_info *n)
{
	struct gw_audit *a = malloc(sizeof(*a));
	size_t at = 0;

	if (!a)
		return;
	while (at < len) {
		const char *nl = memchr(buf + at, '\n', len - at);
		size_t ll = (nl ? (size_t)(nl - buf) : len) - at;

		if (ll <= GW_AUDIT_LINE_MAX &&
		    gw_audit_parse(buf + at, ll, a) == 0 && a->allowed &&
		    !strcmp(a->job, job) &&
		    (!strcmp(a->route, "file") ||
		     !strcmp(a->route, "tarball")) &&
		    a->name[0] && a->version[0])
			add(n, a);
		at += ll + 1;
	}
	free(a);
	qsort(n->packages, n->n_packages, sizeof(n->packages[0]), cmp);
}

int al_pkglist_read(const char *state_dir, off_t from, const char *job,
		    struct al_net_info *n)
{
	char path[4200], *buf;
	struct stat st;
	size_t want, got = 0;
	ssize_t r;
	int fd, rc = 0;

	audit_path(state_dir, path, sizeof(path));
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		goto out;
	}
	if (st.st_size <= from)
		goto out;
	want = (size_t)(st.st_size - from);
	if (want > AL_PKGLIST_READ_MAX)
		want = AL_PKGLIST_READ_MAX;
	buf = malloc(want);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	while (got < want) {
		r = pread(fd, buf + got, want - got, from + (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	al_pkglist_scan(buf, got, job, n);
	free(buf);
out:
	close(fd);
	return rc;
}

int al_pkglist_dropped(const char *state_dir, const char *job, const char *peer,
		       const struct al_net_info *n)
{
	char path[4200];
	struct gw_audit a;
	struct timespec ts;
	struct stat st;
	int fd, rc = 0;

	if (!n->n_dropped)
		return 0;
	audit_path(state_dir, path, sizeof(path));
	/* the gateway made it: no file, no gateway, nobody to tell */
	fd = open(path,
		  O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	/* a regular file only: a FIFO or a device there is not the log */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	for (size_t i = 0; i < n->n_dropped; i++) {
		a = (struct gw_audit){
		    .time_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000,
		    .eco = GW_NET,
		};
		snprintf(a.job, sizeof(a.job), "%s", job);
		snprintf(a.peer, sizeof(a.peer), "%s", peer);
		snprintf(a.route, sizeof(a.route), "net");
		snprintf(a.file, sizeof(a.file), "%s", n->dropped[i]);
		snprintf(a.reason, sizeof(a.reason),
			 "connection to %s dropped: the %s network policy "
			 "reaches the package gateway only",
			 n->dropped[i], AL_PKGLIST_POLICY);
		if (gw_audit_write(fd, &a) < 0)
			rc = -EIO;
	}
	close(fd);
	return rc;
}
