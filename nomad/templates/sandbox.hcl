# The sandbox job: one per session. This is the HCL form of what nomad/src/jobTemplate.ts renders
# to JSON and the Nomad sandbox driver registers through POST /v1/jobs (the driver does not read
# this file; nomad/test/client.test.ts checks that both keep the same driver, port label, group,
# task, restart/reschedule policy and meta keys). Use it to read the job, `nomad job plan` it, or
# run a sandbox by hand:
#
#   nomad job run -var session_id=sesn_123 -var tenant_id=ten_1 -var environment_id=env_1 \
#     -var 'agent_command=["/usr/bin/node","/opt/agentfleet/launcher.mjs","--","/usr/bin/node","/opt/agentfleet/agent.mjs"]' \
#     nomad/templates/sandbox.hcl
#
# Instance sizes (spec limits): small 1 vCPU / 4 GB (default), medium 2 / 8, large 4 / 16; 4 GB disk.
# CPU is in MHz in Nomad: a node offers cores x per-core clock (attribute cpu.frequency), so one
# vCPU = one core's clock: cpu = vcpus x cpu_mhz_per_core (default 2000). MHz are a weighted share,
# not a cap; to pin whole cores use `cores = var.vcpus` instead of `cpu`.
# Memory: `memory` (reservation) and `memory_max` (ceiling) are both the size's memory. Disk: the
# ephemeral disk is the size's disk. Processes: raw_exec and exec have no pids option.
# Environment: only what the launcher needs (it does not pass these on); the sandbox's own
# variables (its env, the proxy) travel in the agent command, and the launcher starts the sandbox
# with exactly those, never with the task's environment.

variable "session_id" { type = string }
variable "tenant_id" { type = string }
variable "environment_id" { type = string }
variable "instance_size" {
  type    = string
  default = "small"
}
variable "vcpus" {
  type    = number
  default = 1
}
variable "memory_mb" {
  type    = number
  default = 4096
}
variable "disk_mb" {
  type    = number
  default = 4096
}
variable "cpu_mhz_per_core" {
  type    = number
  default = 2000
}
variable "driver" {
  # "raw_exec" (enabled on the clients): the agent command isolates itself (bubblewrap, see
  # core/src/adapters/nomad/command.ts). "exec" (chroot + cgroups) needs the sandbox layout
  # (/workspace, /mnt/session/outputs, ...) inside the chroot.
  type    = string
  default = "raw_exec"
}
variable "agent_command" {
  type = list(string)
}
variable "agent_token" {
  type    = string
  default = ""
}
variable "datacenters" {
  type    = list(string)
  default = ["*"]
}

job "sandbox" {
  # The driver names the job sandbox-<session id>; `nomad job run` uses this name.
  type        = "batch"
  datacenters = var.datacenters
  priority    = 50

  meta {
    tenant_id      = var.tenant_id
    session_id     = var.session_id
    environment_id = var.environment_id
    instance_size  = var.instance_size
  }

  group "sandbox" {
    count = 1

    network {
      mode = "host"
      port "agent" {}
    }

    # A sandbox is never restarted or rescheduled: when it dies the session's sandbox is cold and
    # the next turn starts a new one from the latest /workspace snapshot.
    restart {
      attempts = 0
      mode     = "fail"
    }
    reschedule {
      attempts  = 0
      unlimited = false
    }

    ephemeral_disk {
      size = var.disk_mb
    }

    task "agent" {
      driver = var.driver

      config {
        command = var.agent_command[0]
        args    = slice(var.agent_command, 1, length(var.agent_command))
      }

      env {
        AGENTFLEET_AGENT_LISTEN = "${NOMAD_IP_agent}:${NOMAD_PORT_agent}"
        AGENTFLEET_AGENT_TOKEN  = var.agent_token
        AGENTFLEET_SESSION_ID   = var.session_id
      }

      resources {
        cpu    = var.vcpus * var.cpu_mhz_per_core
        memory     = var.memory_mb
        memory_max = var.memory_mb
      }

      kill_signal  = "SIGTERM"
      kill_timeout = "10s"

      logs {
        max_files     = 2
        max_file_size = 10
      }
    }
  }
}
