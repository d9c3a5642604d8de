/* audit.c: audit records as JSON lines (audit.h). */
#include <errno.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "audit.h"

int gw_audit_format(const struct gw_audit *r, struct gw_buf *out)
{
	char when[40], *text;
	time_t t = (time_t)(r->time_ms / 1000);
	struct tm tm;
	json_t *o;
	int rc;

	gmtime_r(&t, &tm);
	strftime(when, 24, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when + 19, sizeof(when) - 19, ".%03dZ",
		 (int)(r->time_ms % 1000));
	o = json_pack("{s:s,s:I,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:b,s:s}",
		      "time", when, "time_ms", (json_int_t)r->time_ms, "job",
		      r->job, "peer", r->peer, "ecosystem", gw_eco_name(r->eco),
		      "route", r->route, "name", r->name, "version", r->version,
		      "file", r->file, "sha256", r->sha256, "decision",
		      r->allowed ? "allow" : "deny", "pending", r->pending,
		      "reason", r->reason);
	if (!o)
		return -ENOMEM;
	if (r->lookalike[0])
		json_object_set_new(o, "lookalike", json_string(r->lookalike));
	text = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(o);
	if (!text)
		return -ENOMEM;
	if (strlen(text) + 1 > GW_AUDIT_LINE_MAX) {
		free(text);
		return -EFBIG;
	}
	rc = gw_buf_add(out, text, strlen(text));
	if (rc == 0)
		rc = gw_buf_add(out, "\n", 1);
	free(text);
	return rc;
}

static void copy(char *dst, size_t size, json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));

	snprintf(dst, size, "%s", v ? v : "");
}

int gw_audit_parse(const char *line, size_t len, struct gw_audit *ret)
{
	struct gw_audit r = {0};
	json_t *o;
	const char *eco, *decision;

	if (len > GW_AUDIT_LINE_MAX)
		return -EBADMSG;
	o = json_loadb(line, len, 0, NULL);
	if (!json_is_object(o)) {
		json_decref(o);
		return -EBADMSG;
	}
	eco = json_string_value(json_object_get(o, "ecosystem"));
	decision = json_string_value(json_object_get(o, "decision"));
	if (eco && !strcmp(eco, "net"))
		r.eco = GW_NET; /* a dropped connection (worker/pkglist.h) */
	else if (!eco || gw_eco_parse(eco, &r.eco) < 0)
		eco = NULL;
	if (!eco || !decision) {
		json_decref(o);
		return -EBADMSG;
	}
	r.time_ms = json_integer_value(json_object_get(o, "time_ms"));
	r.allowed = !strcmp(decision, "allow");
	r.pending = json_is_true(json_object_get(o, "pending"));
	copy(r.job, sizeof(r.job), o, "job");
	copy(r.peer, sizeof(r.peer), o, "peer");
	copy(r.route, sizeof(r.route), o, "route");
	copy(r.name, sizeof(r.name), o, "name");
	copy(r.version, sizeof(r.version), o, "version");
	copy(r.file, sizeof(r.file), o, "file");
	copy(r.sha256, sizeof(r.sha256), o, "sha256");
	copy(r.reason, sizeof(r.reason), o, "reason");
	copy(r.lookalike, sizeof(r.lookalike), o, "lookalike");
	json_decref(o);
	*ret = r;
	return 0;
}

int gw_audit_write(int fd, const struct gw_audit *r)
{
	struct gw_buf b = {0};
	ssize_t w;
	int rc;

	if (fd < 0)
		return 0;
	rc = gw_audit_format(r, &b);
	if (rc == 0) {
		w = write(fd, b.data, b.len);
		rc = w < 0 ? -errno : (size_t)w == b.len ? 0 : -EIO;
	}
	gw_buf_release(&b);
	return rc;
}

static bool id_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || strchr("._:/-", c);
}

bool gw_audit_job_valid(const char *job)
{
	size_t n = strlen(job);

	if (!strcmp(job, GW_HOST_JOB))
		return true;
	if (!strncmp(job, "unknown ", 8)) {
		job += 8;
		n -= 8;
		if (!n || n > 45 ||
		    strspn(job, "0123456789abcdefABCDEF.:") != n)
			return false;
		return true;
	}
	if (!n || n > GW_JOB_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!id_char(job[i]))
			return false;
	return true;
}
