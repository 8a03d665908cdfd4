# Deploys the agentfleet gateways (HTTP API) as a Nomad service job.
#
# UNTESTED: no Nomad agent was available where this was written; this file was neither planned nor
# run against a real cluster. Check it with `nomad job validate` / `nomad job plan` first.
#
# Assumptions:
#   - Jobs run in the namespace "agentfleet" (create it: `nomad namespace apply agentfleet`), so the
#     shared Nomad variable at "nomad/jobs" is readable only by agentfleet's own jobs.
#   - Secrets and adapter URLs are in that variable (workload identities read "nomad/jobs"):
#       nomad var put -namespace agentfleet nomad/jobs \
#         API_KEY=... PLATFORM_ROOT_SECRET=... CONSOLE_SESSION_SECRET=... KAFKA_BROKERS=... MONGODB_URL=... REDIS_URL=...
#   - The release is a tarball of the built repository (npm ci && npm run build && npm prune --omit=dev) with
#     node_modules, fetched by `artifact`; Node 20 is installed on the clients at /usr/bin/node
#     (inside the exec driver's default chroot).
#   - Service registration uses Nomad's built-in service discovery (provider = "nomad").

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

job "agentfleet-gateway" {
  namespace   = "agentfleet"
  type        = "service"
  datacenters = var.datacenters

  update {
    max_parallel     = 1
    min_healthy_time = "10s"
    healthy_deadline = "3m"
    auto_revert      = true
  }

  group "gateway" {
    count = var.count

    network {
      port "http" {}
    }

    service {
      name     = "agentfleet-gateway"
      provider = "nomad"
      port     = "http"
      check {
        type     = "http"
        path     = "/readyz"
        interval = "10s"
        timeout  = "2s"
      }
    }

    task "gateway" {
      driver = "exec"

      artifact {
        source      = var.release_url
        destination = "local/agentfleet"
      }

      config {
        command = "/usr/bin/node"
        args    = ["local/agentfleet/server/dist/cli.js", "gateway"]
      }

      env {
        HOST      = "0.0.0.0"
        PORT      = "${NOMAD_PORT_http}"
        LOG_LEVEL = "info"
        DATA_DIR  = "${NOMAD_TASK_DIR}/data"
        # Longer than SHUTDOWN_GRACE_MS (10 s) so in-flight requests drain before SIGKILL.
        SHUTDOWN_GRACE_MS = "10000"
      }

      # Secrets and adapter URLs from the Nomad variable, rendered as environment variables.
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

      kill_signal  = "SIGTERM"
      kill_timeout = "15s"

      resources {
        cpu    = 1000
        memory = 1024
      }
    }
  }
}
