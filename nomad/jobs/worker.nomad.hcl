# Deploys the agentfleet workers (turn runners) as a Nomad service job.
#
# UNTESTED: no Nomad agent was available where this was written; this file was neither planned nor
# run against a real cluster. Check it with `nomad job validate` / `nomad job plan` first.
#
# Assumptions: as in gateway.nomad.hcl (namespace "agentfleet", secrets and adapter URLs in the
# Nomad variable "nomad/jobs", release tarball via `artifact`, Node 20 at /usr/bin/node). Workers
# also start the sandbox jobs, so the variable holds NOMAD_ADDR and NOMAD_TOKEN for a token whose
# policy allows submit-job, read-job and read-logs in the sandbox namespace (and nothing else):
#
#   namespace "agentfleet-sandboxes" {
#     capabilities = ["submit-job", "read-job", "list-jobs", "read-logs"]
#   }

variable "release_url" {
  type        = string
  description = "URL of the agentfleet release tarball (go-getter source)"
}
variable "count" {
  type    = number
  default = 2
}
variable "datacenters" {
  type    = list(string)
  default = ["*"]
}

job "agentfleet-worker" {
  namespace   = "agentfleet"
  type        = "service"
  datacenters = var.datacenters

  update {
    max_parallel     = 1
    min_healthy_time = "10s"
    healthy_deadline = "3m"
    auto_revert      = true
  }

  group "worker" {
    count = var.count

    network {
      # Workers serve only /healthz, /readyz and /metrics.
      port "ops" {}
    }

    service {
      name     = "agentfleet-worker"
      provider = "nomad"
      port     = "ops"
      check {
        type     = "http"
        path     = "/readyz"
        interval = "10s"
        timeout  = "2s"
      }
    }

    task "worker" {
      driver = "exec"

      artifact {
        source      = var.release_url
        destination = "local/agentfleet"
      }

      config {
        command = "/usr/bin/node"
        args    = ["local/agentfleet/server/dist/cli.js", "worker"]
      }

      env {
        HOST      = "0.0.0.0"
        PORT      = "${NOMAD_PORT_ops}"
        LOG_LEVEL = "info"
        DATA_DIR  = "${NOMAD_TASK_DIR}/data"
        NOMAD_NAMESPACE = "agentfleet-sandboxes"
      }

      template {
        destination = "secrets/agentfleet.env"
        env         = true
        change_mode = "restart"
        data        = <<-EOT
          {{- with nomadVar "nomad/jobs" -}}
          {{- range $k, $v := . }}
          {{ $k }}={{ $v }}
          {{- end }}
          {{- end }}
        EOT
      }

      # A worker drains on SIGTERM: stops fetching, finishes in-flight handlers, bounded turn drain.
      kill_signal  = "SIGTERM"
      kill_timeout = "60s"

      resources {
        cpu    = 2000
        memory = 2048
      }
    }
  }
}
