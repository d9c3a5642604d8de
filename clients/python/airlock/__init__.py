"""airlock: a Python client for the Airlock job queue.

It speaks the queue protocol of docs/queue.md (the same keys and the same
Lua scripts as the C client), so jobs it submits are run by `airlock
serve` like any other, and results stored by serve are read back here.
"""
from .client import (Client, AirlockError, HarnessTimeout, IdConflict,
                     canonical, digest, new_id, stderr_of, stdout_of,
                     valid_id)
from .evaluate import judge, pass_at_k, program, sample_job, verdict
from .session import Exec, ExecResult, Session, SessionError

__all__ = ["Client", "AirlockError", "HarnessTimeout", "IdConflict",
           "canonical", "digest", "new_id",
           "stderr_of", "stdout_of", "valid_id", "pass_at_k", "program",
           "sample_job", "verdict", "judge", "Session", "SessionError",
           "ExecResult", "Exec"]
