/* test_netpolicy.c: a network policy's values (sandbox/net/netpolicy.c): every
 * entry kind read, every refusal with its reason, lists that add up, the
 * dump read back, and name matching as the resolver uses it. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "netpolicy.h"

/* `key = value` must be refused with exactly `want`, leaving p as it was. */
static void expect_bad(const char *key, const char *value, const char *want)
{
	struct sb_net_policy p = {0}, before;
	char why[256];

	assert_int_equal(sb_net_policy_set(&p, "allow", "keep.test", why,
					   sizeof(why)),
			 0);
	before = p;
	if (sb_net_policy_set(&p, key, value, why, sizeof(why)) != -EINVAL)
		fail_msg("%s = %s: accepted", key, value);
	if (strcmp(why, want) != 0)
		fail_msg("%s = %s\n  got:  %s\n  want: %s", key, value, why,
			 want);
	assert_memory_equal(&p, &before, sizeof(p));
}

static void test_allow(void **state)
{
	struct sb_net_policy p = {0};
	char why[256], a[INET6_ADDRSTRLEN];

	(void)state;
	assert_int_equal(sb_net_policy_set(&p, "allow",
					   " Allowed.TEST\t*.example.org "
					   "192.0.2.0/24 2001:DB8::/32 "
					   "198.51.100.7 ::1 _svc.x-y.test",
					   why, sizeof(why)),
			 0);
	assert_int_equal(p.n_names, 3);
	assert_string_equal(p.names[0].name, "allowed.test");
	assert_false(p.names[0].suffix);
	assert_string_equal(p.names[1].name, "example.org");
	assert_true(p.names[1].suffix);
	assert_string_equal(p.names[2].name, "_svc.x-y.test");
	assert_int_equal(p.n_cidrs, 4);
	assert_int_equal(p.cidrs[0].family, AF_INET);
	assert_int_equal(p.cidrs[0].prefix, 24);
	inet_ntop(AF_INET, p.cidrs[0].addr, a, sizeof(a));
	assert_string_equal(a, "192.0.2.0");
	assert_int_equal(p.cidrs[1].family, AF_INET6);
	assert_int_equal(p.cidrs[1].prefix, 32);
	assert_int_equal(p.cidrs[2].prefix, 32);
	assert_int_equal(p.cidrs[3].prefix, 128);
	/* a second line adds */
	assert_int_equal(
	    sb_net_policy_set(&p, "allow", "0.0.0.0/0", why, sizeof(why)), 0);
	assert_int_equal(p.n_cidrs, 5);
	assert_int_equal(p.cidrs[4].prefix, 0);
}

static void test_allow_bad(void **state)
{
	char text[4096];
	size_t n;

	(void)state;
	expect_bad("allow", "keep.test", "lists \"keep.test\" twice");
	expect_bad("allow", "a.test A.TEST", "lists \"a.test\" twice");
	expect_bad("allow", "192.0.2.1/24",
		   "\"192.0.2.1/24\" has host bits set (network "
		   "192.0.2.0/24?)");
	expect_bad("allow", "2001:db8::1/32",
		   "\"2001:db8::1/32\" has host bits set (network "
		   "2001:db8::/32?)");
	expect_bad("allow", "192.0.2.0/33",
		   "\"192.0.2.0/33\": prefix must be 0..32");
	expect_bad("allow", "192.0.2.0/", "\"192.0.2.0/\": prefix must be 0..32");
	expect_bad("allow", "192.0.2.300",
		   "\"192.0.2.300\" is neither a name (host.example, "
		   "*.example) nor a CIDR");
	expect_bad("allow", "x/8", "\"x/8\" is not a CIDR");
	expect_bad("allow", "fe80::zz", "\"fe80::zz\" is not a CIDR");
	expect_bad("allow", "a..test",
		   "\"a..test\" is neither a name (host.example, *.example) "
		   "nor a CIDR");
	expect_bad("allow", "*", "\"*\" is neither a name (host.example, "
				 "*.example) nor a CIDR");
	expect_bad("allow", "*.*.test", "\"*.*.test\" is neither a name "
					"(host.example, *.example) nor a CIDR");
	expect_bad("allow", "a.test.", "\"a.test.\" is neither a name "
				       "(host.example, *.example) nor a CIDR");
	expect_bad("allow", "", "is empty");
	expect_bad("allow", "a.test \x01", "must be printable ASCII");
	/* a 64-byte label */
	expect_bad("allow",
		   "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		   "aaaaa.test",
		   "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		   "aaaaaaaa.test\" is neither a name (host.example, "
		   "*.example) nor a CIDR");
	/* a whole line with one bad entry adds nothing */
	expect_bad("allow", "b.test c.test 10.0.0.1/8",
		   "\"10.0.0.1/8\" has host bits set (network 10.0.0.0/8?)");
	/* caps */
	n = 0;
	for (int i = 0; i < SB_NET_NAMES_MAX; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "h%d.test ",
				      i);
	expect_bad("allow", text, "more than 32 names");
	n = 0;
	for (int i = 0; i <= SB_NET_CIDRS_MAX; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n,
				      "192.0.2.%d ", i);
	expect_bad("allow", text, "more than 32 CIDRs");
}

static void test_ports(void **state)
{
	struct sb_net_policy p = {0};
	char why[256];

	(void)state;
	assert_int_equal(sb_net_policy_set(&p, "ports",
					   "tcp/80 TCP/443 udp/1000-2000 "
					   "tcp/1-65535",
					   why, sizeof(why)),
			 0);
	assert_int_equal(p.n_ports, 4);
	assert_int_equal(p.ports[0].proto, IPPROTO_TCP);
	assert_int_equal(p.ports[0].lo, 80);
	assert_int_equal(p.ports[0].hi, 80);
	assert_int_equal(p.ports[2].proto, IPPROTO_UDP);
	assert_int_equal(p.ports[2].lo, 1000);
	assert_int_equal(p.ports[2].hi, 2000);
	assert_int_equal(p.ports[3].hi, 65535);
	expect_bad("ports", "tcp/0", "\"tcp/0\": ports are 1..65535");
	expect_bad("ports", "tcp/65536", "\"tcp/65536\": ports are 1..65535");
	expect_bad("ports", "tcp/", "\"tcp/\": ports are 1..65535");
	expect_bad("ports", "tcp/8-", "\"tcp/8-\": ports are 1..65535");
	expect_bad("ports", "tcp/-8", "\"tcp/-8\": ports are 1..65535");
	expect_bad("ports", "tcp/1-2-3", "\"tcp/1-2-3\": ports are 1..65535");
	expect_bad("ports", "tcp/9-8", "\"tcp/9-8\": range is backwards");
	expect_bad("ports", "80",
		   "\"80\": want tcp/PORT, udp/PORT or PROTO/LO-HI");
	expect_bad("ports", "udp/53 udp/53", "lists \"udp/53\" twice");
}

static void test_numbers(void **state)
{
	struct sb_net_policy p = {0};
	char why[256];
	size_t n;
	const struct sb_net_key *k = sb_net_policy_keys(&n);

	(void)state;
	assert_int_equal(n, 4);
	for (size_t i = 0; i < n; i++) {
		assert_non_null(k[i].rule);
		assert_non_null(k[i].doc);
	}
	assert_int_equal(
	    sb_net_policy_set(&p, "rate_kbit", "10000000", why, sizeof(why)),
	    0);
	assert_int_equal(p.rate_kbit, 10000000);
	assert_int_equal(
	    sb_net_policy_set(&p, "conn_per_min", "60", why, sizeof(why)), 0);
	assert_int_equal(p.conn_per_min, 60);
	expect_bad("rate_kbit", "10000001", "must be 0..10000000");
	expect_bad("rate_kbit", "99999999999999999999", "must be 0..10000000");
	expect_bad("conn_per_min", "-1", "must be an integer 0..1000000");
	expect_bad("conn_per_min", "", "must be an integer 0..1000000");
	assert_int_equal(sb_net_policy_set(&p, "port", "tcp/1", why,
					   sizeof(why)),
			 -ENOENT);
}

static void test_check(void **state)
{
	struct sb_net_policy p = {0};
	char why[256];

	(void)state;
	assert_int_equal(sb_net_policy_check(&p, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "allows nothing: set allow (names, CIDRs)");
	assert_int_equal(
	    sb_net_policy_set(&p, "allow", "192.0.2.0/24", why, sizeof(why)),
	    0);
	assert_int_equal(sb_net_policy_check(&p, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "names no ports: set ports (e.g. tcp/443)");
	assert_int_equal(
	    sb_net_policy_set(&p, "ports", "udp/53", why, sizeof(why)), 0);
	assert_int_equal(sb_net_policy_check(&p, why, sizeof(why)), 0);
}

/* The dump is key = value lines that read back to the same policy. */
static void test_dump(void **state)
{
	struct sb_net_policy p = {0}, back = {0};
	char why[256], *buf = NULL, *line, *save, *eq;
	size_t len = 0;
	FILE *f;

	(void)state;
	strcpy(p.name, "web");
	assert_int_equal(sb_net_policy_set(&p, "allow",
					   "a.test *.b.test 10.0.0.0/8 "
					   "2001:db8::/48 192.0.2.1",
					   why, sizeof(why)),
			 0);
	assert_int_equal(sb_net_policy_set(&p, "ports", "tcp/80 udp/5-9",
					   why, sizeof(why)),
			 0);
	p.rate_kbit = 7;
	p.conn_per_min = 8;
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(sb_net_policy_dump(&p, f), 0);
	fclose(f);
	assert_non_null(strstr(buf, "\n[network.web]\n"));
	strcpy(back.name, "web");
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '[')
			continue;
		eq = strstr(line, " = ");
		assert_non_null(eq);
		*eq = 0;
		if (sb_net_policy_set(&back, line, eq + 3, why, sizeof(why)))
			fail_msg("%s: %s", line, why);
	}
	assert_memory_equal(&p, &back, sizeof(p));
	free(buf);
}

static void test_match(void **state)
{
	struct sb_net_policy p = {0};
	char why[256];

	(void)state;
	assert_int_equal(sb_net_policy_set(&p, "allow",
					   "allowed.test *.example.org",
					   why, sizeof(why)),
			 0);
	assert_true(sb_net_policy_allows_name(&p, "allowed.test"));
	assert_true(sb_net_policy_allows_name(&p, "ALLOWED.Test."));
	assert_false(sb_net_policy_allows_name(&p, "x.allowed.test"));
	assert_false(sb_net_policy_allows_name(&p, "allowed.test.evil"));
	assert_false(sb_net_policy_allows_name(&p, "notallowed.test"));
	assert_true(sb_net_policy_allows_name(&p, "www.example.org"));
	assert_true(sb_net_policy_allows_name(&p, "a.b.EXAMPLE.org."));
	assert_false(sb_net_policy_allows_name(&p, "example.org"));
	assert_false(sb_net_policy_allows_name(&p, "badexample.org"));
	assert_false(sb_net_policy_allows_name(&p, ".example.org"));
	assert_false(sb_net_policy_allows_name(&p, ""));
	assert_false(sb_net_policy_allows_name(&p, "."));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_allow),   cmocka_unit_test(test_allow_bad),
	    cmocka_unit_test(test_ports),   cmocka_unit_test(test_numbers),
	    cmocka_unit_test(test_check),   cmocka_unit_test(test_dump),
	    cmocka_unit_test(test_match),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
