/* jail_probe.c: run inside a VMM's jail by test_jail (through the same
 * launch as QEMU, fds included) and report, one `key=value` a line on
 * stdout, what the jail lets a compromised VMM see and do.
 *
 *   jail_probe OTHER_PID OTHER_PID TEMPLATE_MEM_PATH
 *   jail_probe net tcp:IP:PORT|udp:IP:PORT ...
 *
 * The second form (tests/net's test_net_vm, in a networked VM's slot)
 * tries each destination: a TCP connect, or a datagram that must be
 * answered (a DNS query), 1.5 s each, reports `DEST=ok` or the errno,
 * then `reachable=N`, its interfaces and whether it holds the tap (fd 9).
 *
 * Errors are reported as errno names ("EPERM"), success as "ok".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <dirent.h>
#include <ftw.h>
#include <net/if.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <unistd.h>

static int sockets;

static const char *res(int r)
{
	return r < 0 ? strerrorname_np(errno) : "ok";
}

static int count_socket(const char *path, const struct stat *st, int flag,
			struct FTW *ftw)
{
	(void)flag;
	(void)ftw;
	if (!strncmp(path, "/proc", 5) && (path[5] == '/' || !path[5]))
		return 0;
	sockets += S_ISSOCK(st->st_mode);
	return 0;
}

/* Numeric entries of /proc: the processes this jail can see. */
static void report_procs(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;

	printf("procs=");
	while (d && (e = readdir(d)))
		if (e->d_name[0] >= '0' && e->d_name[0] <= '9')
			printf("%s,", e->d_name);
	printf("\n");
	if (d)
		closedir(d);
}

static void report_others(int argc, char **argv)
{
	for (int i = 1; i < 3 && i < argc; i++) {
		pid_t pid = atoi(argv[i]);

		printf("kill%d=%s\n", i, res(kill(pid, SIGKILL)));
		printf("ptrace%d=%s\n", i,
		       res((int)ptrace(PTRACE_ATTACH, pid, 0, 0)));
	}
}

static void report_mem(const char *path)
{
	void *p;

	printf("mem_open=%s\n", res(open(path, O_RDWR | O_CLOEXEC)));
	printf("memfd_write=%s\n", res((int)write(5, "x", 1)));
	printf("memfd_pwrite=%s\n", res((int)pwrite(5, "x", 1, 4096)));
	printf("memfd_reopen_write=%s\n",
	       res((int)write(open("/proc/self/fd/5", O_RDWR), "x", 1)));
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, 5, 0);
	printf("memfd_mmap_shared=%s\n", res(p == MAP_FAILED ? -1 : 0));
	printf("memfd_truncate=%s\n", res(ftruncate(5, 0)));
}

static void report_net(void)
{
	struct if_nameindex *ifs = if_nameindex();

	printf("ifaces=");
	for (struct if_nameindex *i = ifs; i && i->if_index; i++)
		printf("%s,", i->if_name);
	printf("\n");
	if (ifs)
		if_freenameindex(ifs);
}

/* One destination "tcp:IP:PORT" or "udp:IP:PORT": 0 when reached. */
static int reach(const char *dst)
{
	static const unsigned char query[] = {
	    0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 7, 'a', 'l', 'l', 'o',
	    'w', 'e', 'd', 4, 't', 'e', 's', 't', 0, 0, 1, 0, 1};
	struct sockaddr_in a = {.sin_family = AF_INET};
	char ip[64];
	unsigned port;
	bool tcp = !strncmp(dst, "tcp:", 4);
	struct pollfd p = {.events = tcp ? POLLOUT : POLLIN};
	int fd, err = 0;
	socklen_t len = sizeof(err);

	if (sscanf(dst + 4, "%63[^:]:%u", ip, &port) != 2 ||
	    inet_pton(AF_INET, ip, &a.sin_addr) != 1)
		return errno = EINVAL, -1;
	a.sin_port = htons((unsigned short)port);
	fd = socket(AF_INET, (tcp ? SOCK_STREAM : SOCK_DGRAM) | SOCK_NONBLOCK,
		    0);
	if (fd < 0)
		return -1;
	p.fd = fd;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 &&
	    errno != EINPROGRESS)
		goto fail;
	if (!tcp && send(fd, query, sizeof(query), 0) < 0)
		goto fail;
	if (poll(&p, 1, 1500) != 1) {
		errno = ETIMEDOUT;
		goto fail;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err) {
		errno = err ? err : errno;
		goto fail;
	}
	if (!tcp && recv(fd, ip, sizeof(ip), 0) < 0)
		goto fail;
	close(fd);
	return 0;
fail:
	err = errno;
	close(fd);
	errno = err;
	return -1;
}

static int net_mode(int argc, char **argv)
{
	int reached = 0;

	for (int i = 2; i < argc; i++) {
		int r = reach(argv[i]);

		printf("%s=%s\n", argv[i], res(r));
		reached += r == 0;
	}
	printf("reachable=%d\n", reached);
	report_net();
	printf("tap=%s\n", res(fcntl(9, F_GETFD)));
	printf("end=1\n");
	return 0;
}

int main(int argc, char **argv)
{
	char host[64] = "";
	gid_t groups[8];
	int n = getgroups(8, groups);

	if (argc > 1 && !strcmp(argv[1], "net"))
		return net_mode(argc, argv);

	printf("uid=%u\ngid=%u\nngroups=%d\n", (unsigned)getuid(),
	       (unsigned)getgid(), n);
	printf("pid=%d\n", (int)getpid());
	printf("nnp=%d\n", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
	printf("capbset_sys_admin=%d\n", prctl(PR_CAPBSET_READ, 21, 0, 0, 0));
	report_procs();
	report_others(argc, argv);
	if (argc > 3)
		report_mem(argv[3]);
	nftw("/", count_socket, 16, FTW_PHYS);
	printf("sockets=%d\n", sockets);
	report_net();
	gethostname(host, sizeof(host) - 1);
	printf("hostname=%s\n", host);
	printf("root_write=%s\n",
	       res(open("/x", O_WRONLY | O_CREAT | O_CLOEXEC, 0600)));
	printf("usr_write=%s\n",
	       res(open("/usr/x", O_WRONLY | O_CREAT | O_CLOEXEC, 0600)));
	printf("etc_passwd=%s\n", res(open("/etc/passwd", O_RDONLY)));
	printf("end=1\n");
	return 0;
}
