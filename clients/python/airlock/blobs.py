"""A result's byte strings (stdout, stderr, collected files) as bytes,
for both clients: the Redis one's msgpack types and the HTTP one's JSON
byte strings differ only in how one value is read (`conv`)."""


def blobs_to_bytes(res, conv):
    """res with every step's stdout/stderr and every file made bytes by
    conv(value); res itself when it is not a dict."""
    if not isinstance(res, dict):
        return res
    for st in res.get("steps") or []:
        if isinstance(st, dict):
            for k in ("stdout", "stderr"):
                if k in st:
                    st[k] = conv(st[k])
    if isinstance(res.get("files"), dict):
        res["files"] = {k: conv(v) for k, v in res["files"].items()}
    return res
