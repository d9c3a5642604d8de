/* fuzz_gw.c: libFuzzer target for the package gateway's decoders of
 * untrusted bytes (gateway/): request routes and Accept headers (bytes a
 * VM chose), package files (wheels, sdists, npm tarballs: bytes from
 * anywhere), the allowlist, audit lines, the look-alike check.
 *
 * Input: one selector byte, then that decoder's input:
 *   0: "METHOD PATH\nACCEPT"      gw_route_parse, gw_accept
 *   1: KIND byte, package bytes   gw_pkg_parse (.whl, .tar.gz, .tgz)
 *   2: allowlist text             gw_allow_parse
 *   3: an audit line              gw_audit_parse, then format again
 *   4: "NAME\0REF"                gw_lookalike_pair
 *   5: KIND byte, a document      gw_up_pypi_files (0 JSON, 1 HTML),
 *                                 gw_up_npm_file (2), gw_up_time_parse
 *   6: a tar, uncompressed        gzipped here, then gw_pkg_parse as an
 *                                 npm .tgz: the tar reader itself, which
 *                                 mutations of gzipped bytes rarely reach
 * Beyond "no crash, no leak": a route that parses names a valid file or
 * name, a package that parses has a valid name and version.
 *
 * Built with FUZZ_SMOKE it is a CTest unit test: each seed in
 * tests/fuzz/corpus/gateway, then seeded random mutations of them.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "allow.h"
#include "audit.h"
#include "lookalike.h"
#include "pkgfile.h"
#include "route.h"
#include "upstream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *dup0(const uint8_t *d, size_t n)
{
	char *s = malloc(n + 1);

	if (!s)
		abort();
	memcpy(s, d, n);
	s[n] = '\0';
	return s;
}

static void route(const uint8_t *d, size_t n)
{
	char *s = dup0(d, n), *nl = strchr(s, '\n'), *sp = strchr(s, ' ');
	struct gw_route r;

	if (nl)
		*nl = '\0';
	if (sp && (!nl || sp < nl)) {
		*sp = '\0';
		if (gw_route_parse(s, sp + 1, &r) == 0) {
			if ((r.kind == GW_R_PY_FILE || r.kind == GW_R_PY_META ||
			     r.kind == GW_R_NPM_TARBALL) &&
			    !gw_file_name_valid(r.file))
				abort();
			if (r.kind == GW_R_NPM_DOC && !gw_npm_name_valid(r.key))
				abort();
			if (strstr(r.file, "..") == r.file ||
			    strchr(r.file, '/'))
				abort();
		}
	}
	if (nl)
		(void)gw_accept(nl + 1),
		    (void)gw_accept_npm_abbreviated(nl + 1);
	free(s);
}

static void package(const uint8_t *d, size_t n)
{
	static const char *const names[] = {"tinypkg-1.0-py3-none-any.whl",
					    "onlysdist-1.0.tar.gz",
					    "tiny-hook-1.0.0.tgz"};
	struct gw_pkg p;

	if (n < 1)
		return;
	if (gw_pkg_parse(names[d[0] % 3], d + 1, n - 1, &p) == 0) {
		if (!gw_version_valid(p.version) ||
		    strlen(p.meta) != p.meta_len)
			abort();
		gw_pkg_release(&p);
	}
}

/* Raw tar bytes, gzipped (level 0: fast, the tar reader is the target)
 * and read as an npm package: one that parses has a package.json that is
 * valid JSON with a valid name. */
static void npm_tar(const uint8_t *d, size_t n)
{
	z_stream z = {0};
	size_t cap = n + n / 100 + 1024;
	uint8_t *gz = malloc(cap);
	struct gw_pkg p;

	if (!gz || deflateInit2(&z, 0, Z_DEFLATED, 16 + 15, 8,
				Z_DEFAULT_STRATEGY) != Z_OK) {
		free(gz);
		return;
	}
	z.next_in = (uint8_t *)d;
	z.avail_in = (uInt)n;
	z.next_out = gz;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) == Z_STREAM_END &&
	    gw_pkg_parse("x-1.0.0.tgz", gz, z.total_out, &p) == 0) {
		if (!gw_npm_name_valid(p.name))
			abort();
		gw_pkg_release(&p);
	}
	deflateEnd(&z);
	free(gz);
}

/* An upstream's document (upstream.h): every file taken has a valid
 * name, a URL and the hash fetch will check. */
static void upstream(const uint8_t *d, size_t n)
{
	static struct gw_up_file f[GW_UP_FILES_MAX];
	char err[256], *s;
	int64_t t;
	int r;

	if (n < 1)
		return;
	s = dup0(d + 1, n - 1);
	(void)gw_up_time_parse(s, &t);
	if (d[0] % 3 == 2)
		r = gw_up_npm_file(s, n - 1, "tiny-npm", "1.0.0", f, err,
				   sizeof(err));
	else
		r = gw_up_pypi_files(s, n - 1, d[0] % 3 == 0, "tinypkg", "1.0",
				     f, GW_UP_FILES_MAX, err, sizeof(err));
	for (int i = 0; i < r; i++)
		if (!gw_file_name_valid(f[i].file) || !f[i].url[0] ||
		    strlen(d[0] % 3 == 2 ? f[i].sha512 : f[i].sha256) !=
			(d[0] % 3 == 2 ? GW_SHA512_B64 : GW_SHA256_HEX))
			abort();
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gw_allow a;
	struct gw_audit r;
	struct gw_buf b = {0};
	char err[256], why[GW_LOOKALIKE_WHY_MAX], *s;

	if (size < 1)
		return 0;
	switch (data[0]) {
	case 0:
		route(data + 1, size - 1);
		break;
	case 1:
		package(data + 1, size - 1);
		break;
	case 2:
		if (gw_allow_parse("f", (const char *)data + 1, size - 1, &a,
				   err, sizeof(err)) == 0)
			gw_allow_release(&a);
		break;
	case 3:
		if (gw_audit_parse((const char *)data + 1, size - 1, &r) == 0) {
			if (gw_audit_format(&r, &b) < 0 && b.len)
				abort();
			gw_buf_release(&b);
		}
		break;
	case 4:
		s = dup0(data + 1, size - 1);
		if (strlen(s) + 1 < size - 1)
			(void)gw_lookalike_pair(s, s + strlen(s) + 1, why);
		free(s);
		break;
	case 5:
		upstream(data + 1, size - 1);
		break;
	case 6:
		npm_tar(data + 1, size - 1);
		break;
	}
	return 0;
}

#ifdef FUZZ_SMOKE
#include "smoke.h"

/* Byte 0 picks the decoder: mutations leave it; %2e splices. */
int main(int argc, char **argv)
{
	static const char alphabet[] = "/.%\0\n;=-@_ 0f";
	static const struct smoke s = {
	    .name = "fuzz_gw",
	    .rounds = 30000,
	    .max_seeds = 32,
	    .seed_bytes = 8192,
	    .keep = 1,
	    .alphabet = alphabet,
	    .n_alphabet = sizeof(alphabet) - 1,
	    .splice = "%2e",
	    .n_splice = 3,
	};

	return smoke_main(&s, argc, argv);
}
#endif
