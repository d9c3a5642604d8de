"""ndjson.py: read a streamed exec (POST/GET .../exec?stream=1, NDJSON)
as a client that may have been cut off mid-line would. usage:
ndjson.py FILE WHAT, WHAT one of
  data   the stdout bytes of the complete lines, in order (checks that
         each chunk starts where the last ended)
  next   the stdout offset to reattach from (after the last complete chunk)
  exec   the exec number (the first line)
  last   the last complete line, as JSON"""
import base64
import json
import sys

out, nxt, n, last = b"", None, None, None
with open(sys.argv[1], "rb") as f:
    for line in f:
        if not line.endswith(b"\n"):
            break  # cut off mid-line: not received
        d = json.loads(line)
        if n is None:
            n, nxt = d["exec"], d["offset"]
        if d.get("fd") == 1:
            v = d["data"]
            b = base64.b64decode(v["base64"]) if isinstance(v, dict) \
                else v.encode()
            assert d["offset"] == nxt, (d["offset"], nxt)
            out += b
            nxt += len(b)
        last = d
what = sys.argv[2]
if what == "data":
    sys.stdout.buffer.write(out)
elif what == "next":
    print(nxt)
elif what == "exec":
    print(n)
else:
    print(json.dumps(last))
