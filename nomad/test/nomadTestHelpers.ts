/**
 * Shared helpers of the Nomad client tests (client.test.ts, jobTemplate.test.ts): a raw_exec job
 * running node, and waits on allocations through blocking queries against the Nomad fake.
 */
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Allocation, Job, NomadClient } from '../src/index.js';

export const here = dirname(fileURLToPath(import.meta.url));
let seq = 0;
export const uniq = (base: string) => `${base}-${process.pid}-${Date.now().toString(36)}-${seq++}`;

/** A raw_exec job running node with `script`. */
export function nodeJob(
  id: string,
  script: string,
  extra: { type?: Job['Type']; count?: number; env?: Record<string, string>; port?: boolean } = {},
): Job {
  return {
    ID: id,
    Type: extra.type ?? 'batch',
    Datacenters: ['dc1'],
    Meta: { purpose: 'test' },
    TaskGroups: [
      {
        Name: 'g',
        Count: extra.count ?? 1,
        Networks: extra.port ? [{ DynamicPorts: [{ Label: 'http' }] }] : [],
        Tasks: [
          {
            Name: 't',
            Driver: 'raw_exec',
            Config: { command: process.execPath, args: ['-e', script] },
            Env: extra.env ?? {},
            Resources: { CPU: 100, MemoryMB: 64 },
            KillTimeout: 2_000_000_000,
          },
        ],
      },
    ],
  };
}

export const SLEEP = 'setInterval(() => {}, 1000)';

export async function waitFor(
  client: NomadClient,
  allocId: string,
  pred: (a: Allocation) => boolean,
  ms = 10_000,
): Promise<Allocation> {
  let index = 0;
  const deadline = Date.now() + ms;
  for (;;) {
    const { data, index: next } = await client.getAllocation(allocId, { index, wait: '2s' });
    if (pred(data)) return data;
    if (Date.now() > deadline)
      throw new Error(`allocation ${allocId} stuck in ${data.ClientStatus}`);
    index = next;
  }
}

export async function firstAlloc(client: NomadClient, jobId: string): Promise<string> {
  let index = 0;
  for (let i = 0; i < 50; i++) {
    const { data, index: next } = await client.jobAllocations(jobId, { index, wait: '2s' });
    if (data.length) return data[0].ID;
    index = next;
  }
  throw new Error(`no allocation for ${jobId}`);
}
