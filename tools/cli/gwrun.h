/* gwrun.h: the package gateway beside a dispatcher (gwrun.c): `airlock
 * serve` and the embedded mode start it when the config defines the
 * `packages` network policy (docs/packages.md, "The VM path").
 */
#ifndef AL_CLI_GWRUN_H
#define AL_CLI_GWRUN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "config.h"

/* The policy that names the gateway: `[network.packages]`. */
#define AL_GW_POLICY "packages"

/* True when the config defines AL_GW_POLICY. */
bool al_gw_wanted(const struct al_config *cfg);

/* Fork the gateway's keeper, a process that starts airlock-gateway in a
 * network namespace of its own (sb_net_gateway_link()), as its own uid,
 * serving STATE/packages on SB_NET_GW_IP:SB_NET_GW_PORT, and starts it
 * again when it dies (after 1 s, doubling to 30 s while it keeps dying
 * young). Call before any thread starts. The keeper's pid, or -errno
 * with `err` set. */
pid_t al_gw_spawn(const struct al_config *cfg, char *err, size_t errlen);

/* Stop the keeper and its gateway (SIGTERM), reap it; pid <= 0: none. */
void al_gw_stop(pid_t pid);

#endif
