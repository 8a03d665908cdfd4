/**
 * Allocation placement for the Nomad API fake (see fakeCluster.ts): datacenter glob matching,
 * host ports on 127.0.0.1 for a task group's networks (dynamic ports are free ports of this
 * machine), and the allocation record Nomad's API returns (TaskStates starting with a
 * "Received" event, AllocatedResources per task). Pure data building; the cluster owns indexes.
 * Proved through the Nomad client and driver tests on the fake (nomad/test/client.test.ts).
 */
import { createServer } from 'node:net';
import { nowNs, taskEvent, type Json } from './fakeTasks.js';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

export function globMatch(pattern: string, value: string): boolean {
  const re = new RegExp(
    `^${pattern
      .split('*')
      .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );
  return re.test(value);
}

export interface AllocNetwork {
  ports: Json[];
  networks: Json[];
}

/** The task group's networks with their ports bound on 127.0.0.1 (dynamic ones picked free). */
export async function allocNetworks(tg: Json): Promise<AllocNetwork> {
  const ports: Json[] = [];
  const networks: Json[] = [];
  for (const net of (tg.Networks ?? []) as Json[]) {
    const dyn = [];
    for (const p of net.DynamicPorts ?? []) {
      const value = await freePort();
      dyn.push({ Label: p.Label, Value: value, To: p.To ?? 0, HostNetwork: 'default' });
      ports.push({ Label: p.Label, Value: value, To: p.To ?? 0, HostIP: '127.0.0.1' });
    }
    const reserved = (net.ReservedPorts ?? []).map((p: Json) => ({
      Label: p.Label,
      Value: p.Value,
      To: p.To ?? 0,
      HostNetwork: 'default',
    }));
    for (const p of reserved)
      ports.push({ Label: p.Label, Value: p.Value, To: p.To, HostIP: '127.0.0.1' });
    networks.push({
      Mode: net.Mode || 'host',
      Device: 'lo',
      IP: '127.0.0.1',
      CIDR: '',
      MBits: 0,
      DNS: null,
      ReservedPorts: reserved.length ? reserved : null,
      DynamicPorts: dyn.length ? dyn : null,
    });
  }
  return { ports, networks };
}

export interface BuildAllocArgs {
  id: string;
  job: Json;
  tg: Json;
  i: number;
  ev: Json;
  index: number;
  node: { nodeId: string; nodeName: string };
  network: AllocNetwork;
}

/** A new pending allocation `i` of task group `tg`, as Nomad's API returns it. */
export function buildAlloc({ id, job, tg, i, ev, index, node, network }: BuildAllocArgs): Json {
  const taskStates: Json = {};
  const taskRes: Json = {};
  for (const t of tg.Tasks as Json[]) {
    taskStates[t.Name] = {
      State: 'pending',
      Failed: false,
      Restarts: 0,
      LastRestart: null,
      StartedAt: null,
      FinishedAt: null,
      Events: [taskEvent('Received', 'Task received by client')],
    };
    taskRes[t.Name] = {
      Cpu: {
        CpuShares: t.Resources?.CPU ?? 100,
        ReservedCores: t.Resources?.Cores ? [...Array(t.Resources.Cores).keys()] : null,
      },
      Memory: {
        MemoryMB: t.Resources?.MemoryMB ?? 300,
        MemoryMaxMB: t.Resources?.MemoryMaxMB ?? 0,
      },
      Networks: null,
      Devices: null,
    };
  }
  return {
    ID: id,
    EvalID: ev.ID,
    Name: `${job.ID}.${tg.Name}[${i}]`,
    Namespace: job.Namespace,
    NodeID: node.nodeId,
    NodeName: node.nodeName,
    JobID: job.ID,
    Job: structuredClone(job),
    JobType: job.Type,
    JobVersion: job.Version,
    TaskGroup: tg.Name,
    AllocatedResources: {
      Tasks: taskRes,
      Shared: {
        DiskMB: tg.EphemeralDisk?.SizeMB ?? 300,
        Networks: network.networks,
        Ports: network.ports,
      },
    },
    NetworkStatus: null,
    DesiredStatus: 'run',
    DesiredDescription: '',
    ClientStatus: 'pending',
    ClientDescription: 'No tasks have started',
    TaskStates: taskStates,
    DeploymentStatus: null,
    FollowupEvalID: '',
    PreemptedAllocations: null,
    PreemptedByAllocation: '',
    RescheduleTracker: null,
    CreateIndex: index,
    ModifyIndex: index,
    AllocModifyIndex: index,
    CreateTime: nowNs(),
    ModifyTime: nowNs(),
  };
}
