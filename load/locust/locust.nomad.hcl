# A distributed Locust run against an agentfleet platform, as one Nomad batch job: one master
# (group "master") and `workers` Locust workers (group "worker") running load/locust/locustfile.py
# with the venv's locust (test/kit/python/setup.sh builds it from test/kit/python/requirements.txt).
#
# UNTESTED: no Nomad agent was available where this was written; this file was neither planned nor
# run against a real cluster. Check it with `nomad job validate` / `nomad job plan` first. The
# Locust command lines are the ones load/README.md runs by hand (one master, N workers on
# loopback), which were run.
#
# Assumptions:
# - every client node that may run these tasks has the repository (or a release tarball of it) at
#   var.repo and the venv at var.python, e.g. after `git clone … /opt/agentfleet && AGENTFLEET_VENV=
#   /opt/agentfleet-venv bash /opt/agentfleet/test/python/setup.sh`;
# - raw_exec is enabled on those clients (plugin "raw_exec" { config { enabled = true } }); the
#   tasks run as the Nomad client's user and need no isolation. With the exec driver instead,
#   var.repo and the venv must be mounted into the task's chroot;
# - the API key of the tenant to load lives in the Nomad variable "nomad/jobs/agentfleet-locust"
#   (key `api_key`), readable by this job's tasks;
# - the master's port (5557) is reachable from the workers' nodes; the workers find the master
#   through its Nomad service (provider "nomad").
#
# Run: nomad job run -var target=http://gateway.internal:8080 -var workers=4 locust.nomad.hcl
# The master's summary and threshold lines are in its task's stdout (nomad alloc logs), its CSV
# stats under the allocation's alloc/data/locust_*.csv; the master's exit code is the run's.

variable "target" {
  type        = string
  description = "the platform's URL; passed as LOAD_BASE_URL too, which lets the locustfile load it off loopback"
}
variable "workers" {
  type    = number
  default = 2
}
variable "users" {
  type    = number
  default = 32
}
variable "spawn_rate" {
  type    = number
  default = 8
}
variable "run_time" {
  type    = string
  default = "60s"
}
variable "repo" {
  type    = string
  default = "/opt/agentfleet"
}
variable "python" {
  type    = string
  default = "/opt/agentfleet-venv/bin/python"
}
variable "datacenters" {
  type    = list(string)
  default = ["*"]
}

job "agentfleet-locust" {
  type        = "batch"
  datacenters = var.datacenters

  group "master" {
    count = 1

    network {
      port "locust" {
        static = 5557
      }
    }

    service {
      name     = "agentfleet-locust-master"
      provider = "nomad"
      port     = "locust"
    }

    restart {
      attempts = 0
      mode     = "fail"
    }

    task "master" {
      driver = "raw_exec"

      config {
        command = var.python
        args = [
          "-m", "locust",
          "-f", "${var.repo}/load/locust/locustfile.py",
          "--master", "--headless",
          "--master-bind-port", "${NOMAD_PORT_locust}",
          "--expect-workers", "${var.workers}",
          "--expect-workers-max-wait", "120",
          "-u", "${var.users}",
          "-r", "${var.spawn_rate}",
          "--run-time", var.run_time,
          "--host", var.target,
          "--csv", "${NOMAD_ALLOC_DIR}/data/locust",
          "--only-summary",
        ]
      }

      template {
        destination = "secrets/load.env"
        env         = true
        data        = <<-EOT
          LOAD_API_KEY={{ with nomadVar "nomad/jobs/agentfleet-locust" }}{{ .api_key }}{{ end }}
        EOT
      }

      env {
        LOAD_BASE_URL = var.target
        # Thresholds (load/locust/locustfile.py): the master judges the whole run.
        LOAD_MAX_FAIL_RATIO = "0.01"
      }

      resources {
        cpu    = 500
        memory = 256
      }
    }
  }

  group "worker" {
    count = var.workers

    restart {
      attempts = 3
      delay    = "5s"
      mode     = "fail"
    }

    task "worker" {
      driver = "raw_exec"

      config {
        command = var.python
        args = [
          "-m", "locust",
          "-f", "${var.repo}/load/locust/locustfile.py",
          "--worker",
        ]
      }

      # LOCUST_MASTER_NODE_HOST/PORT are --master-host/--master-port. Re-rendered when the
      # master's service appears or moves, which restarts the worker (change_mode "restart").
      template {
        destination = "secrets/load.env"
        env         = true
        change_mode = "restart"
        data        = <<-EOT
          LOAD_API_KEY={{ with nomadVar "nomad/jobs/agentfleet-locust" }}{{ .api_key }}{{ end }}
          {{ range nomadService "agentfleet-locust-master" }}
          LOCUST_MASTER_NODE_HOST={{ .Address }}
          LOCUST_MASTER_NODE_PORT={{ .Port }}
          {{ end }}
        EOT
      }

      env {
        LOAD_BASE_URL = var.target
      }

      resources {
        # A worker is one Python process (one core at most): add workers, not CPU, to grow.
        cpu    = 1000
        memory = 256
      }
    }
  }
}
