/* principal.h: who is asking. Every API token (the HTTP API's bearer
 * token, a door's API key) names a principal; sessions, their snapshots
 * and forks belong to the principal that made them (docs/security.md,
 * "Principals").
 *
 * Lives in tools/config/ because it is settings (http.tokens_file,
 * http.token_file) turned into a table, and because every front end
 * (tools/api/ for the HTTP API, the doors beside it, tools/cli/) may
 * include tools/config/ while none may include another's headers: no
 * arrow up. It includes nothing of the dispatcher; the front end copies
 * the principal's name into alq_client.principal (queue.h), which the
 * session operations (dispatcher/session/) check.
 *
 * Use, in order:
 *   1. al_principals_load(cfg, &p, err, len) at start: http.tokens_file
 *      (lines "PRINCIPAL TOKEN [operator]"), else http.token_file (its
 *      one token is the operator "operator"), else none (loopback peers
 *      act as the operator: the behaviour before principals);
 *   2. per request: al_principals_find(&p, token) -> the principal, or
 *      NULL (401); with p.n == 0 the caller authenticates by peer and
 *      uses al_principal_operator();
 *   3. al_principal_session_name(who) -> "" for an operator (sees and
 *      acts on every session) or the name to put in alq_client.principal;
 *   4. al_principals_release(&p) at exit (tokens wiped).
 */
#ifndef AL_PRINCIPAL_H
#define AL_PRINCIPAL_H

#include <stdbool.h>
#include <stddef.h>

#define AL_PRINCIPAL_NAME_MAX 64   /* [A-Za-z0-9_.@-], 1..64 */
#define AL_PRINCIPALS_MAX     4096 /* lines of a tokens file */

struct al_config;

struct al_principal {
	char name[AL_PRINCIPAL_NAME_MAX + 1]; /* who */
	bool operator; /* every session, every snapshot */
};

struct al_principals {
	size_t n;		  /* entries (0: no token configured) */
	struct al_principal *who; /* n principals */
	char (*token)[257];	  /* their tokens, same order */
};

/* Load the principals of cfg's http.tokens_file (else http.token_file).
 * Either file: a regular file of root's or this uid's, not writable by
 * group or others nor readable by others. A tokens file: one "PRINCIPAL
 * TOKEN" per line, "operator" as a third word for the operator role,
 * '#' comments and blank lines; a name or token twice is refused. 0, or
 * -errno with err set (-EINVAL a bad line, naming it; -EPERM the
 * file's mode or owner). *ret is empty on failure. */
int al_principals_load(const struct al_config *cfg, struct al_principals *ret,
		       char *err, size_t errlen);
/* Parse tokens-file text (al_principals_load's format) into *ret; `what`
 * names it in errors. For tests and doors that hold the text already. */
int al_principals_parse(const char *text, const char *what,
			struct al_principals *ret, char *err, size_t errlen);
/* The principal whose token is `token` (compared in constant time with
 * every entry), or NULL. */
const struct al_principal *al_principals_find(const struct al_principals *p,
					      const char *token);
/* The operator a token-less loopback peer acts as. */
const struct al_principal *al_principal_operator(void);
/* What goes in alq_client.principal: "" for an operator, else the name. */
const char *al_principal_session_name(const struct al_principal *who);
/* Is s a principal name ([A-Za-z0-9_.@-], 1..AL_PRINCIPAL_NAME_MAX)? */
bool al_principal_name_valid(const char *s);
void al_principals_release(struct al_principals *p);
/* A file holding secrets (token files): regular, root's or this uid's,
 * not writable by group or others nor readable by others. 0 or -errno
 * (-EPERM) with err naming `key`. */
int al_config_secret_file_ok(const char *path, const char *key, char *err,
			     size_t errlen);

#endif
