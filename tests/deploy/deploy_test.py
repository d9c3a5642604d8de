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
env = {e["name"]: e for e in c.get("env", [])}
check("redis" not in conf, "a Redis URL (and password) in the ConfigMap")
url = env.get("AIRLOCK_REDIS", {}).get("value", "")
m = re.match(r"redis://:\$\(REDIS_PASSWORD\)@([^:/]+)", url)
check(m and m.group(1).split(".")[0] == svc["metadata"]["name"] and
      m.group(1).split(".")[1] == svc["metadata"]["namespace"],
      f"$AIRLOCK_REDIS {url} is not the Service with the Secret's password")
check(env.get("REDIS_PASSWORD", {}).get("valueFrom", {})
      .get("secretKeyRef", {}).get("name") == "redis-auth",
      "serve's REDIS_PASSWORD not from the Secret redis-auth")
allowed = conf["templates"]["allowed"].split()


def mib(q):
    m = re.fullmatch(r"(\d+)(Mi|Gi)", str(q))
    return int(m.group(1)) * (1024 if m.group(2) == "Gi" else 1)


# images on every node before its first job (issue 37): an init container
# builds templates.allowed into the state dir serve reads
init = pod.get("initContainers", [])
check(len(init) == 1 and init[0]["command"][:3] ==
      ["/usr/bin/airlock", "image", "build"] and
      sorted(a for a in init[0]["command"][3:] if not a.startswith("/")
             and not a.startswith("--")) == sorted(allowed),
      "no init container building templates.allowed's images")
check(init and state in {m["mountPath"] for m in init[0]["volumeMounts"]},
      "the image build does not write the state dir")
# resources sized from the workers' caps
w = int(conf["workers"]["count"])
req = c.get("resources", {}).get("requests", {})
check(w > 0 and mib(req.get("memory", "0Mi")) >=
      w * int(conf["workers"]["memory_mb"]),
      "serve's memory request below workers x workers.memory_mb")
check(float(req.get("cpu", 0)) >= w, "serve's CPU request below a core a worker")

# the structure every object needs (no Kubernetes schema offline: these
# are its required fields for the kinds used here)
KINDS = {"Namespace": "v1", "ConfigMap": "v1", "Service": "v1",
         "DaemonSet": "apps/v1", "StatefulSet": "apps/v1"}
for d in k8s:
    if not d:
        continue
    check(KINDS.get(d["kind"]) == d["apiVersion"],
          f"{d['kind']}: apiVersion {d['apiVersion']}")
    check(d["metadata"].get("name"), f"{d['kind']} without a name")
    spec = d.get("spec", {})
    if d["kind"] in ("DaemonSet", "StatefulSet"):
        labels = spec["template"]["metadata"]["labels"]
        check(all(labels.get(k) == v for k, v in
                  spec["selector"]["matchLabels"].items()),
              f"{d['kind']} selector does not match its pods")
        ps = spec["template"]["spec"]
        for k in ps.get("containers", []) + ps.get("initContainers", []):
            check(k.get("name") and k.get("image"),
                  f"{d['kind']}: a container without name or image")
            # an image never pulled must be on the node: pin the pod
            if k.get("imagePullPolicy") == "Never":
                check(ps.get("nodeSelector", {}).get("airlock.dev/kvm")
                      == "true", f"{d['kind']} {k['name']}: image never "
                      "pulled, pod not pinned to the nodes that have it")
            for p in k.get("ports", []):
                check(isinstance(p.get("containerPort"), int),
                      f"{k['name']}: containerPort not an integer")

# Redis: auth from a Secret, no protected-mode no, data on a PVC
rs = by_kind["StatefulSet"][0]
rc = rs["spec"]["template"]["spec"]["containers"][0]
check("--requirepass" in rc["command"] and "$(REDIS_PASSWORD)" in
      rc["command"] and any(e.get("valueFrom", {}).get("secretKeyRef")
                            for e in rc.get("env", [])),
      "Redis without requirepass from a Secret")
check("protected-mode" not in " ".join(rc["command"]),
      "Redis turns protected mode off")
check(not any("emptyDir" in v for v in
              rs["spec"]["template"]["spec"].get("volumes", [])) and
      rs["spec"].get("volumeClaimTemplates"),
      "Redis data not on a PersistentVolumeClaim")
check("--appendonly" in rc["command"], "Redis without its AOF")
for want in (f"terminationGracePeriodSeconds: {pod['terminationGracePeriodSeconds']}",
             f"shutdown_grace_ms = {grace_ms}", "/dev/kvm", "GET /health",
             str(mport), state):
    check(want in docs, f"docs/deploy.md does not say {want!r}")

# --- Nomad ------------------------------------------------------------------------------

job_all = hcl(open(os.path.join(SRC, "deploy/nomad/airlock.nomad.hcl")).read())
job = job_all["job"][0]
check(job["_labels"] == ["airlock"] and job["type"] == "system",
      "not a system job")
tasks = {t["_labels"][0]: t for t in job["group"][0]["task"]}
task = tasks["serve"]
cfgb = task["config"][0]
check(task["driver"] == "docker" and cfgb["privileged"] is True,
      "task not privileged docker")
check({"host_path": "/dev/kvm", "container_path": "/dev/kvm"}
      in [{k: v for k, v in d.items() if k != "_labels"}
          for d in cfgb["devices"]], "no /dev/kvm device")
tmpl = [t for t in task["template"] if t["destination"].endswith(".conf")][0]
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
nw = int(nconf["workers"]["count"])
check(nw > 0 and task["resources"][0]["memory"] >=
      nw * int(nconf["workers"]["memory_mb"]),
      "Nomad serve's memory below workers x workers.memory_mb")
img_t = tasks.get("images", {})
check(img_t.get("lifecycle", [{}])[0].get("hook") == "prestart" and
      img_t["config"][0]["args"][:2] == ["image", "build"] and
      sorted(img_t["config"][0]["args"][2:]) ==
      sorted(nconf["templates"]["allowed"].split()),
      "no prestart task building templates.allowed's images")
check("redis" not in nconf and any(
    t.get("env") is True and "AIRLOCK_REDIS=" in t["data"]
    for t in task["template"]), "Nomad: the Redis URL not from a secret")
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
