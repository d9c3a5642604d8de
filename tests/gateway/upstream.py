#!/usr/bin/env python3
"""upstream.py: a local stand-in for an upstream registry, for
fetch_test.sh (never a real one): python's http.server over DIR, plus

  GET /simple/NAME/ with Accept naming application/vnd.pypi.simple.v1+json
      and DIR/simple/NAME/index.json present: that file, as PEP 691 JSON;
  GET /same/PATH    302 to /PATH on this server (a redirect fetch follows);
  GET /away/PATH    302 to http://127.0.0.2:PORT/PATH (another origin:
                    fetch must refuse it).

usage: upstream.py DIR PORTFILE   (binds 127.0.0.1, a free port, written
to PORTFILE once listening)
"""
import http.server
import os
import sys

PY_JSON = "application/vnd.pypi.simple.v1+json"


class Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, fmt, *args):
        sys.stderr.write("upstream: " + fmt % args + "\n")

    def redirect(self, where):
        self.send_response(302)
        self.send_header("Location", where)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        port = self.server.server_address[1]
        if self.path.startswith("/same/"):
            return self.redirect(self.path[5:])
        if self.path.startswith("/away/"):
            return self.redirect("http://127.0.0.2:%d%s" % (port, self.path[5:]))
        local = self.translate_path(self.path)
        js = os.path.join(local, "index.json")
        if PY_JSON in self.headers.get("Accept", "") and os.path.isfile(js):
            with open(js, "rb") as f:
                body = f.read()
            self.send_response(200)
            self.send_header("Content-Type", PY_JSON)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return None
        return super().do_GET()


def main():
    root, portfile = sys.argv[1], sys.argv[2]
    os.chdir(root)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(portfile + ".tmp", portfile)
    srv.serve_forever()


if __name__ == "__main__":
    main()
