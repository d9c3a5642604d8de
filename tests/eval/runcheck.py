"""runcheck.py: run the check runner (sandbox/agent/check.py) on the host
for the eval tests, the way the guest's step does as far as a host can:
its own session, and everything left in that session killed after its
report. A sample may fork, and a fork of the sample's thread waits on its
gate forever (check.py, _sample); in the guest the step's cgroup kills it,
here this does, so no test leaves processes behind."""
import os
import signal
import subprocess
import sys


def run_check(check, stdin, timeout):
    """check.py's stdout for `stdin` (bytes), or None when it ran past
    `timeout` seconds."""
    p = subprocess.Popen([sys.executable, check], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    try:
        out, _ = p.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        out = None
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.communicate()
    return out
