/**
 * The sandbox job template (one batch job per session): rendering, instance sizes, the HCL
 * twin in nomad/templates/sandbox.hcl, and a run on the Nomad fake.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startNomadFake } from '../../test/kit/nomad/fake.js';
import {
  AGENT_PORT_LABEL,
  jobTemplate,
  NomadClient,
  SANDBOX_SIZES,
  sandboxJobId,
} from '../src/index.js';
import { firstAlloc, here, waitFor } from './nomadTestHelpers.js';

describe('sandbox job template', () => {
  const spec = {
    tenantId: 'ten_1',
    sessionId: 'sesn_abc',
    environmentId: 'env_1',
    size: 'small',
    env: { FOO: 'bar' },
    proxyUrl: 'http://proxy:3128',
  };

  it('renders one batch job per session with the agent port, meta and size resources', () => {
    const job = jobTemplate(spec, {
      agentCommand: ['/usr/bin/node', 'agent.js', '--listen', '${NOMAD_PORT_agent}'],
      agentToken: 'tok',
    });
    expect(job.ID).toBe(sandboxJobId('sesn_abc'));
    expect(job.Type).toBe('batch');
    expect(job.Meta).toMatchObject({
      tenant_id: 'ten_1',
      session_id: 'sesn_abc',
      environment_id: 'env_1',
      instance_size: 'small',
    });
    const tg = job.TaskGroups[0];
    expect(tg.Networks![0].DynamicPorts).toEqual([{ Label: AGENT_PORT_LABEL }]);
    expect(tg.RestartPolicy).toMatchObject({ Attempts: 0, Mode: 'fail' });
    expect(tg.ReschedulePolicy).toMatchObject({ Attempts: 0, Unlimited: false });
    expect(tg.EphemeralDisk!.SizeMB).toBe(4096);
    const task = tg.Tasks[0];
    expect(task.Driver).toBe('raw_exec');
    expect(task.Config).toEqual({
      command: '/usr/bin/node',
      args: ['agent.js', '--listen', '${NOMAD_PORT_agent}'],
    });
    expect(task.Resources).toEqual({ CPU: 2000, MemoryMB: 4096, MemoryMaxMB: 4096 });
    // only the launcher's variables: the sandbox's env and proxy travel in the agent command
    expect(task.Env).toEqual({
      AGENTFLEET_AGENT_LISTEN: '${NOMAD_IP_agent}:${NOMAD_PORT_agent}',
      AGENTFLEET_AGENT_TOKEN: 'tok',
      AGENTFLEET_SESSION_ID: 'sesn_abc',
    });
  });

  it('runs a base_image with the docker task driver: image, read-only binds, published port, process cap', () => {
    const mounts = [{ source: '/usr/bin/node', target: '/opt/agentfleet/bin/node' }];
    const job = jobTemplate(
      { ...spec, baseImage: 'python:3.12-slim' },
      { agentCommand: ['/opt/agentfleet/bin/node', 'launcher.mjs'], dockerMounts: mounts },
    );
    expect(job.Meta).toMatchObject({ base_image: 'python:3.12-slim' });
    const task = job.TaskGroups[0].Tasks[0];
    expect(task.Driver).toBe('docker');
    expect(task.Config).toEqual({
      image: 'python:3.12-slim',
      command: '/opt/agentfleet/bin/node',
      args: ['launcher.mjs'],
      ports: [AGENT_PORT_LABEL],
      mount: [
        {
          type: 'bind',
          source: '/usr/bin/node',
          target: '/opt/agentfleet/bin/node',
          readonly: true,
        },
      ],
      pids_limit: SANDBOX_SIZES.small.processes,
      cap_drop: ['ALL'],
      security_opt: ['no-new-privileges'],
    });
    expect(task.Env!.AGENTFLEET_AGENT_LISTEN).toBe('0.0.0.0:${NOMAD_PORT_agent}');
    // without a base_image nothing changes: the configured driver, the host's address
    const plain = jobTemplate({ ...spec, baseImage: null }, { agentCommand: ['a'] });
    expect(plain.TaskGroups[0].Tasks[0].Driver).toBe('raw_exec');
    expect(plain.Meta).not.toHaveProperty('base_image');
  });

  it('maps instance sizes to MHz (vCPUs × MHz per core) or whole cores, and memory', () => {
    for (const [size, r] of Object.entries(SANDBOX_SIZES)) {
      const mhz = jobTemplate({ ...spec, size }, { agentCommand: ['a'], cpuMhzPerCore: 2500 })
        .TaskGroups[0].Tasks[0].Resources;
      expect(mhz).toEqual({ CPU: r.cpus * 2500, MemoryMB: r.memoryMb, MemoryMaxMB: r.memoryMb });
      const cores = jobTemplate({ ...spec, size }, { agentCommand: ['a'], cpuMode: 'cores' })
        .TaskGroups[0].Tasks[0].Resources;
      expect(cores).toEqual({ Cores: r.cpus, MemoryMB: r.memoryMb, MemoryMaxMB: r.memoryMb });
      expect(
        jobTemplate({ ...spec, size }, { agentCommand: ['a'] }).TaskGroups[0].EphemeralDisk!.SizeMB,
      ).toBe(r.diskMb);
    }
    expect(SANDBOX_SIZES.medium).toMatchObject({ cpus: 2, memoryMb: 8192, diskMb: 4096 });
    expect(SANDBOX_SIZES.large).toMatchObject({ cpus: 4, memoryMb: 16384, diskMb: 4096 });
    expect(() => jobTemplate({ ...spec, size: 'huge' }, { agentCommand: ['a'] })).toThrow(
      /unknown instance size/,
    );
  });

  it('keeps nomad/templates/sandbox.hcl in step with the JSON template', () => {
    const hcl = readFileSync(join(here, '../templates/sandbox.hcl'), 'utf8');
    const job = jobTemplate(spec, { agentCommand: ['a'] });
    const tg = job.TaskGroups[0];
    const task = tg.Tasks[0];
    expect(hcl).toMatch(new RegExp(`type\\s+=\\s+"${job.Type}"`));
    expect(hcl).toContain(`group "${tg.Name}"`);
    expect(hcl).toContain(`task "${task.Name}"`);
    expect(hcl).toContain(`port "${AGENT_PORT_LABEL}"`);
    expect(hcl).toMatch(new RegExp(`default\\s+=\\s+"${task.Driver}"`));
    for (const k of Object.keys(job.Meta!)) expect(hcl).toMatch(new RegExp(`${k}\\s+=`));
    for (const k of Object.keys(task.Env!)) expect(hcl).toContain(k);
    expect(hcl).not.toMatch(/HTTPS?_PROXY\s+=/);
    expect(hcl).toMatch(/memory_max = var\.memory_mb/);
    expect(hcl).toContain('"${NOMAD_IP_agent}:${NOMAD_PORT_agent}"');
    expect(hcl).toMatch(/restart \{\s+attempts = 0\s+mode\s+= "fail"/);
    expect(hcl).toMatch(/reschedule \{\s+attempts\s+= 0\s+unlimited = false/);
    expect(hcl).toMatch(/kill_signal\s+= "SIGTERM"/);
  });

  it('runs on the fake: the agent command gets its port through interpolation', async () => {
    const fake = await startNomadFake();
    try {
      const client = new NomadClient({ address: fake.address });
      const script =
        "require('node:net').createServer((s) => s.end('hi')).listen(Number(process.env.AGENTFLEET_AGENT_LISTEN.split(':')[1]), process.env.AGENTFLEET_AGENT_LISTEN.split(':')[0])";
      const job = jobTemplate(spec, {
        agentCommand: [process.execPath, '-e', script],
        driver: 'raw_exec',
        datacenters: ['dc1'],
      });
      await client.registerJob(job);
      const allocId = await firstAlloc(client, job.ID);
      const alloc = await waitFor(client, allocId, (a) => a.ClientStatus === 'running');
      const port = alloc.AllocatedResources!.Shared!.Ports!.find(
        (p) => p.Label === AGENT_PORT_LABEL,
      )!;
      const net = await import('node:net');
      let got = '';
      for (let i = 0; i < 50 && got !== 'hi'; i++) {
        got = await new Promise<string>((resolve) => {
          const s = net.connect(port.Value, port.HostIP!);
          let buf = '';
          s.on('data', (d) => (buf += d));
          s.on('end', () => resolve(buf));
          s.on('error', () => setTimeout(() => resolve(''), 50));
        });
      }
      expect(got).toBe('hi');
      await client.stopJob(job.ID, { purge: true });
    } finally {
      await fake.close();
    }
  });
});
