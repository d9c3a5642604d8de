/* principal.c: tokens to principals (principal.h): the tokens file read
 * and checked, a token looked up in constant time per entry.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "principal.h"
#include "readfile.h"

#define TOKENS_FILE_MAX (AL_PRINCIPALS_MAX * 340u)

static const struct al_principal operator_ = {.name = "operator",
					      .operator= true };

const struct al_principal *al_principal_operator(void)
{
	return &operator_;
}

const char *al_principal_session_name(const struct al_principal *who)
{
	return !who || who->operator? "" : who->name;
}

bool al_principal_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > AL_PRINCIPAL_NAME_MAX)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.@-", *s))
			return false;
	return true;
}

/* Equal, in time that depends on the lengths only. */
static bool ct_equal(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	unsigned char d = na != nb;

	for (size_t i = 0; i < na; i++)
		d |= (unsigned char)a[i] ^ (unsigned char)b[i < nb ? i : 0];
	return d == 0;
}

const struct al_principal *al_principals_find(const struct al_principals *p,
					      const char *token)
{
	const struct al_principal *hit = NULL;

	if (!token || !token[0])
		return NULL;
	for (size_t i = 0; i < p->n; i++) /* no early exit: every entry */
		if (ct_equal(token, p->token[i]) && !hit)
			hit = &p->who[i];
	return hit;
}

void al_principals_release(struct al_principals *p)
{
	if (p->token)
		explicit_bzero(p->token, p->n * sizeof(*p->token));
	free(p->token);
	free(p->who);
	*p = (struct al_principals){0};
}

/* Add (name, token, op) unless either is there already. */
static int add(struct al_principals *p, const char *name, const char *token,
	       bool op)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->who[i].name, name) ||
		    !strcmp(p->token[i], token))
			return -EEXIST;
	snprintf(p->who[p->n].name, sizeof(p->who[p->n].name), "%s", name);
	p->who[p->n].operator= op;
	snprintf(p->token[p->n], sizeof(p->token[p->n]), "%s", token);
	p->n++;
	return 0;
}

/* One line (NUL-terminated, no newline): 0 added or blank, -EINVAL. */
static int parse_line(struct al_principals *p, char *line, const char **why)
{
	char *w[4] = {0}, *save = NULL, *hash = strchr(line, '#');
	int n = 0;

	if (hash)
		*hash = '\0';
	for (char *t = strtok_r(line, " \t\r", &save); t;
	     t = strtok_r(NULL, " \t\r", &save))
		if (n < 4)
			w[n++] = t;
		else
			n++;
	if (n == 0)
		return 0;
	*why = "not \"PRINCIPAL TOKEN [operator]\"";
	if (n < 2 || n > 3 || (n == 3 && strcmp(w[2], "operator")))
		return -EINVAL;
	*why = "a principal is 1..64 characters of [A-Za-z0-9_.@-]";
	if (!al_principal_name_valid(w[0]))
		return -EINVAL;
	*why = "a token is 16..256 characters of [A-Za-z0-9._~+/=-]";
	if (!al_config_token_valid(w[1]))
		return -EINVAL;
	*why = "that principal or token is on an earlier line";
	if (p->n >= AL_PRINCIPALS_MAX)
		*why = "more than 4096 principals";
	if (p->n >= AL_PRINCIPALS_MAX || add(p, w[0], w[1], n == 3) < 0)
		return -EINVAL;
	return 0;
}

int al_principals_parse(const char *text, const char *what,
			struct al_principals *ret, char *err, size_t errlen)
{
	struct al_principals p = {0};
	char *copy = strdup(text), *line, *save = NULL;
	const char *why = "";
	unsigned no = 0;
	int r = 0;

	p.who = calloc(AL_PRINCIPALS_MAX, sizeof(*p.who));
	p.token = calloc(AL_PRINCIPALS_MAX, sizeof(*p.token));
	if (!copy || !p.who || !p.token) {
		r = -ENOMEM;
		snprintf(err, errlen, "%s: out of memory", what);
		goto out;
	}
	/* strtok_r skips empty lines, so count them by hand */
	for (line = copy; line && r == 0; line = save) {
		save = strchr(line, '\n');
		if (save)
			*save++ = '\0';
		no++;
		r = parse_line(&p, line, &why);
	}
	if (r < 0)
		snprintf(err, errlen, "%s line %u: %s", what, no, why);
out:
	if (copy) {
		explicit_bzero(copy, strlen(text));
		free(copy);
	}
	if (r < 0)
		al_principals_release(&p);
	*ret = p;
	return r;
}

int al_config_secret_file_ok(const char *path, const char *key, char *err,
			     size_t errlen)
{
	struct stat st;

	if (stat(path, &st) < 0) {
		snprintf(err, errlen, "%s %s: %s", key, path, strerror(errno));
		return -errno;
	}
	if (!S_ISREG(st.st_mode) ||
	    (st.st_uid != 0 && st.st_uid != geteuid()) ||
	    (st.st_mode & (S_IWGRP | S_IWOTH | S_IROTH))) {
		snprintf(err, errlen,
			 "%s %s: owner uid %u, mode %04o: must be a file of "
			 "root's or uid %u, not writable by group or others "
			 "nor readable by others (chmod 0600 or 0640)",
			 key, path, (unsigned)st.st_uid,
			 (unsigned)(st.st_mode & 07777), (unsigned)geteuid());
		return -EPERM;
	}
	return 0;
}

/* The one token of http.token_file as the operator. */
static int load_single(const char *path, struct al_principals *ret, char *err,
		       size_t errlen)
{
	char *text = NULL, line[300];
	size_t len;
	int r = al_read_file(path, 256, &text, &len);

	if (r < 0) {
		snprintf(err, errlen, "http.token_file %s: %s", path,
			 r == -E2BIG ? "over 256 bytes" : strerror(-r));
		return r;
	}
	while (len && strchr(" \t\r\n", text[len - 1]))
		len--;
	text[len] = '\0';
	if (!al_config_token_valid(text)) {
		snprintf(err, errlen,
			 "http.token_file %s: not a token (16..256 "
			 "characters of [A-Za-z0-9._~+/=-])",
			 path);
		r = -EINVAL;
	} else {
		snprintf(line, sizeof(line), "operator %s operator", text);
		r = al_principals_parse(line, "http.token_file", ret, err,
					errlen);
		explicit_bzero(line, sizeof(line));
	}
	explicit_bzero(text, len);
	free(text);
	return r;
}

int al_principals_load(const struct al_config *cfg, struct al_principals *ret,
		       char *err, size_t errlen)
{
	const char *path = cfg->http.tokens_file;
	char *text = NULL;
	size_t len;
	int r;

	*ret = (struct al_principals){0};
	if (!path[0] && !cfg->http.token_file[0])
		return 0;
	if (!path[0]) {
		r = al_config_secret_file_ok(cfg->http.token_file,
					     "http.token_file", err, errlen);
		return r < 0 ? r
			     : load_single(cfg->http.token_file, ret, err,
					   errlen);
	}
	r = al_config_secret_file_ok(path, "http.tokens_file", err, errlen);
	if (r < 0)
		return r;
	r = al_read_file(path, TOKENS_FILE_MAX, &text, &len);
	if (r < 0) {
		snprintf(err, errlen, "http.tokens_file %s: %s", path,
			 r == -E2BIG ? "too large" : strerror(-r));
		return r;
	}
	r = al_principals_parse(text, "http.tokens_file", ret, err, errlen);
	explicit_bzero(text, len);
	free(text);
	if (r == 0 && ret->n == 0) {
		snprintf(err, errlen, "http.tokens_file %s: no principal",
			 path);
		r = -EINVAL;
	}
	return r;
}
