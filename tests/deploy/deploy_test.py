#!/usr/bin/env python3
"""deploy_test.py AIRLOCK_BIN SOURCE_DIR: the deployment files of deploy/
parse and hold what docs/deploy.md says they hold.

Kubernetes (deploy/kubernetes/airlock.yaml, python3-yaml): a DaemonSet
whose serve is privileged, mounts /dev/kvm, a host path for the state dir
(the one its config names) and the config from a ConfigMap; its readiness
probe is GET /health on the port metrics.listen names; its grace period
outlasts workers.shutdown_grace_ms; a Redis Service that redis.url names.
Nomad (deploy/nomad/airlock.nomad.hcl, read by a small HCL reader below:
blocks, `key = value` attributes, heredocs, lists): a system job, the
docker driver privileged with /dev/kvm, SIGTERM with a kill_timeout that
outlasts the drain, an HTTP check on /health at the metrics port. Both
configs pass `airlock config --check`, and docs/deploy.md names the
values the files hold.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import yaml

BIN, SRC = sys.argv[1], sys.argv[2]
fails = []


def check(cond, what):
    if not cond:
        fails.append(what)


def ini(text):
    """airlock.conf as {section: {key: value}} (comments dropped)."""
    out, sec = {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            sec = line.strip("[]")
            out.setdefault(sec, {})
        else:
            k, v = (s.strip() for s in line.split("=", 1))
            out[sec][k] = v
    return out


def config_check(text, name):
    with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as f:
        f.write(text)
    try:
        r = subprocess.run([BIN, "config", "--check", "--config", f.name],
                           capture_output=True, text=True)
        check(r.returncode == 0, f"{name}: airlock config --check: {r.stderr}")
    finally:
        os.unlink(f.name)


# --- a small HCL reader ------------------------------------------------------

TOKEN = re.compile(r'''
    (?P<ws>\s+|\#[^\n]*|//[^\n]*)
  | (?P<heredoc><<-?(?P<tag>[A-Z]+)\n(?P<body>.*?)\n\s*(?P=tag)\b)
  | (?P<str>"(?:[^"\\]|\\.)*")
  | (?P<num>-?\d+(?:\.\d+)?)
  | (?P<word>[A-Za-z_][A-Za-z0-9_.-]*)
  | (?P<punct>[{}\[\]=,])
''', re.S | re.X)


def hcl_tokens(text):
    pos, out = 0, []
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            raise ValueError(f"HCL: cannot read at {text[pos:pos + 30]!r}")
        pos = m.end()
        if m.group("ws"):
            continue
        if m.group("heredoc"):
            out.append(("str", m.group("body")))
        elif m.group("str"):
            out.append(("str", json.loads(m.group("str"))))
        elif m.group("num"):
            out.append(("num", float(m.group("num"))))
        elif m.group("word"):
            w = m.group("word")
            out.append(("bool", w == "true") if w in ("true", "false")
                       else ("word", w))
        else:
            out.append(("p", m.group("punct")))
    return out


def hcl_value(t, i):
    kind, v = t[i]
    if kind == "p" and v == "[":
        items, i = [], i + 1
        while t[i] != ("p", "]"):
            item, i = hcl_value(t, i)
            items.append(item)
            if t[i] == ("p", ","):
                i += 1
        return items, i + 1
    if kind == "p" and v == "{":
        return hcl_body(t, i + 1)
    return v, i + 1


def hcl_body(t, i):
    """Attributes and blocks until '}' (or the end): a dict; blocks go
    in lists under their type, with their labels under '_labels'."""
    body = {}
    while i < len(t) and t[i] != ("p", "}"):
        kind, name = t[i]
        if kind not in ("word", "str"):
            raise ValueError(f"HCL: unexpected {t[i]}")
        if t[i + 1] == ("p", "="):
            body[name], i = hcl_value(t, i + 2)
            continue
        labels, i = [], i + 1
        while t[i][0] == "str":
            labels.append(t[i][1])
            i += 1
        if t[i] != ("p", "{"):
            raise ValueError(f"HCL: block {name} without a body")
        block, i = hcl_body(t, i + 1)
        block["_labels"] = labels
        body.setdefault(name, []).append(block)
    return body, i + 1


def hcl(text):
    body, _ = hcl_body(hcl_tokens(text), 0)
    return body


def seconds(s):
    m = re.fullmatch(r"(\d+)(ms|s|m|h)", s)
    return int(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[
        m.group(2)]


# --- Kubernetes ------------------------------------------------------------------

docs = open(os.path.join(SRC, "docs/deploy.md")).read()
k8s = list(yaml.safe_load_all(
    open(os.path.join(SRC, "deploy/kubernetes/airlock.yaml"))))
by_kind = {}
for d in k8s:
    if d:
        by_kind.setdefault(d["kind"], []).append(d)
ds = by_kind["DaemonSet"][0]
cm = by_kind["ConfigMap"][0]
svc = by_kind["Service"][0]
conf_text = cm["data"]["airlock.conf"]
conf = ini(conf_text)
config_check(conf_text, "ConfigMap airlock.conf")
pod = ds["spec"]["template"]["spec"]
c = pod["containers"][0]
check(c["securityContext"].get("privileged") is True, "serve not privileged")
vols = {v["name"]: v for v in pod["volumes"]}
mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
check(mounts.get("/dev/kvm") and
      vols[mounts["/dev/kvm"]]["hostPath"]["path"] == "/dev/kvm",
      "no /dev/kvm from the host")
state = conf["sandbox"]["state_dir"]
check(state in mounts and "hostPath" in vols[mounts[state]],
      f"state dir {state} not a host path")
cfg_mount = [p for p, n in mounts.items() if "configMap" in vols[n]]
check(len(cfg_mount) == 1 and
      c["command"][-1] == cfg_mount[0] + "/airlock.conf",
      "serve does not read the ConfigMap's airlock.conf")
mport = int(conf["metrics"]["listen"].rsplit(":", 1)[1])
probe = c["readinessProbe"]["httpGet"]
check(probe["path"] == "/health" and probe["port"] == mport,
      f"readiness probe {probe} is not GET /health on {mport}")
grace_ms = int(conf["workers"]["shutdown_grace_ms"])
check(pod["terminationGracePeriodSeconds"] * 1000 > grace_ms,
      "terminationGracePeriodSeconds does not outlast the drain")
check(ds["spec"]["updateStrategy"]["type"] == "RollingUpdate",
      "no rolling update")
host = re.match(r"redis://([^:/]+)", conf["redis"]["url"]).group(1)
check(host.split(".")[0] == svc["metadata"]["name"] and
      host.split(".")[1] == svc["metadata"]["namespace"],
      f"redis.url {host} is not the Service")
for want in (f"terminationGracePeriodSeconds: {pod['terminationGracePeriodSeconds']}",
             f"shutdown_grace_ms = {grace_ms}", "/dev/kvm", "GET /health",
             str(mport), state):
    check(want in docs, f"docs/deploy.md does not say {want!r}")

# --- Nomad ------------------------------------------------------------------------------

job_all = hcl(open(os.path.join(SRC, "deploy/nomad/airlock.nomad.hcl")).read())
job = job_all["job"][0]
check(job["_labels"] == ["airlock"] and job["type"] == "system",
      "not a system job")
task = job["group"][0]["task"][0]
cfgb = task["config"][0]
check(task["driver"] == "docker" and cfgb["privileged"] is True,
      "task not privileged docker")
check({"host_path": "/dev/kvm", "container_path": "/dev/kvm"}
      in [{k: v for k, v in d.items() if k != "_labels"}
          for d in cfgb["devices"]], "no /dev/kvm device")
tmpl = task["template"][0]
nconf = ini(tmpl["data"])
config_check(tmpl["data"], "Nomad template airlock.conf")
check(cfgb["args"][-1] == "/" + tmpl["destination"],
      "serve does not read the template's config")
check(f"{nconf['sandbox']['state_dir']}:{nconf['sandbox']['state_dir']}"
      in cfgb["volumes"], "state dir not mounted from the host")
check(task["kill_signal"] == "SIGTERM" and
      seconds(task["kill_timeout"]) * 1000 >
      int(nconf["workers"]["shutdown_grace_ms"]),
      "kill_timeout does not outlast the drain")
chk = task["service"][0]["check"][0]
nport = job["group"][0]["network"][0]["port"][0]
check(chk["type"] == "http" and chk["path"] == "/health" and
      nport["static"] == int(nconf["metrics"]["listen"].rsplit(":", 1)[1]),
      "the check is not GET /health on metrics.listen's port")
for want in ('type = "system"', f'kill_timeout = "{task["kill_timeout"]}"',
             "redis+sentinel://"):
    check(want in docs, f"docs/deploy.md does not say {want!r}")

# the image build needs no registry
img = open(os.path.join(SRC, "deploy/image/build.sh")).read()
check("mmdebstrap" in img and "FROM " not in img, "image build not mmdebstrap")

if fails:
    for f in fails:
        print("FAIL:", f, file=sys.stderr)
    sys.exit(1)
print("deploy: ok (k8s: %d documents; nomad: job %s)" %
      (len(k8s), job["_labels"][0]))
