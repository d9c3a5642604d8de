"""errors.py: the client's exceptions, shared by the Redis client
(client.py), the HTTP client (http.py) and evaluate (evaluate.py); it
imports none of them."""


class AirlockError(Exception):
    """A queue-level failure (not a job's verdict)."""


class IdConflict(AirlockError):
    """A job id is taken by another payload: submitted before with a
    different job, or its stored result is of a different job. Nothing
    was enqueued for it; choose another id (docs/queue.md, "Job ids").
    ids: the refused ids."""

    def __init__(self, ids, why="submitted before with another payload"):
        self.ids = list(ids)
        AirlockError.__init__(
            self, "id conflict: %s: %s" % (", ".join(self.ids[:5]), why))


class HarnessTimeout(AirlockError):
    """evaluate() stopped waiting (its timeout=) before every sample had a
    result. This is the harness giving up, never a sample's verdict: no
    sample is counted, passed or failed, and no pass@k is computed.

    results: the samples in order, as evaluate() returns them; those with
    no result yet have `result` and `passed` None. pending: their job ids.
    The jobs keep running: call evaluate() again with the same samples to
    pick up the results (the ids are the same, nothing runs twice)."""

    def __init__(self, results, pending, timeout):
        self.results = results
        self.pending = pending
        AirlockError.__init__(
            self, "harness timeout: %d of %d samples have no result after "
            "%ss (not their verdict; evaluate() again to go on)"
            % (len(pending), len(results), timeout))
