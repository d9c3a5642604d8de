# airlock.nomad.hcl: Airlock on Nomad: a system job, one `airlock serve`
# on every client node with KVM, on a shared Redis. docs/deploy.md
# explains each choice; tests/deploy/deploy_test.py reads this file.
#
#   nomad job run deploy/nomad/airlock.nomad.hcl
#
# Uses the docker driver with the image built by deploy/image/build.sh
# (`docker load`-free: `docker import airlock-image.tar airlock:local` on
# each node). The driver's allow_privileged must be true in the client
# config.
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
[redis]
url = redis://redis.service.consul:6379
[queue]
name = default
[workers]
count = 0
shutdown_grace_ms = 60000
[sandbox]
state_dir = /var/lib/airlock
[metrics]
listen = 0.0.0.0:9464
EOC
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

      resources {
        cpu    = 500
        memory = 256
      }
    }
  }
}
