# airlock.nomad.hcl: Airlock on Nomad: a system job, one `airlock serve`
# on every client node with KVM, on a shared Redis. docs/deploy.md
# explains each choice; tests/deploy/deploy_test.py reads this file.
#
#   nomad job run deploy/nomad/airlock.nomad.hcl
#
# Uses the docker driver with the image built by deploy/image/build.sh
# (`docker load`-free: `docker import airlock-image.tar airlock:local` on
# each node). The driver's allow_privileged must be true in the client
# config. The task `images` builds the guest images on each node before
# serve starts (a no-op once built). Redis is yours (with a password and
# persistence, docs/deploy.md "Redis"): its URL with the password comes
# from Nomad Variables at nomad/jobs/airlock (key redis_url), never this
# file:
#   nomad var put nomad/jobs/airlock redis_url='redis://:PASS@HOST:6379'

job "airlock" {
  type        = "system"
  datacenters = ["dc1"]

  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }

  update {
    max_parallel = 1
    stagger      = "30s"
  }

  group "serve" {
    restart {
      attempts = 10
      interval = "30m"
      delay    = "5s"
      mode     = "delay"
    }

    network {
      port "metrics" {
        static = 9464
      }
    }

    # the guest images, built on this node before serve takes a job
    task "images" {
      driver = "docker"
      lifecycle {
        hook    = "prestart"
        sidecar = false
      }
      config {
        image      = "airlock:local"
        command    = "/usr/bin/airlock"
        args       = ["image", "build", "python", "c"]
        privileged = true
        volumes = [
          "/var/lib/airlock:/var/lib/airlock",
        ]
      }
      resources {
        cpu    = 2000
        memory = 1024
      }
    }

    task "serve" {
      driver = "docker"

      # SIGTERM starts serve's drain; running jobs get
      # workers.shutdown_grace_ms (60 s) before Nomad's SIGKILL.
      kill_signal  = "SIGTERM"
      kill_timeout = "90s"

      config {
        image      = "airlock:local"
        command    = "/usr/bin/airlock"
        args       = ["serve", "--config", "/local/airlock.conf"]
        privileged = true
        network_mode = "host"
        devices = [
          {
            host_path      = "/dev/kvm"
            container_path = "/dev/kvm"
          }
        ]
        volumes = [
          "/var/lib/airlock:/var/lib/airlock",
          "/sys/fs/cgroup:/sys/fs/cgroup",
        ]
      }

      template {
        destination = "local/airlock.conf"
        data        = <<EOC
[queue]
name = default
[templates]
allowed = python c
[workers]
count = 2
memory_mb = 512
shutdown_grace_ms = 60000
[sandbox]
state_dir = /var/lib/airlock
[metrics]
listen = 0.0.0.0:9464
EOC
      }

      # the Redis URL (with its password) as $AIRLOCK_REDIS
      template {
        destination = "secrets/redis.env"
        env         = true
        data        = <<EOR
AIRLOCK_REDIS={{ with nomadVar "nomad/jobs/airlock" }}{{ .redis_url }}{{ end }}
EOR
      }

      service {
        name = "airlock"
        port = "metrics"
        check {
          type     = "http"
          path     = "/health"
          interval = "10s"
          timeout  = "2s"
        }
      }

      # sized as the Kubernetes DaemonSet (docs/deploy.md, "Sizing"):
      # 2 workers x workers.memory_mb 512 + templates and serve; MHz
      # for two cores
      resources {
        cpu    = 4000
        memory = 1536
      }
    }
  }
}
