/**
 * The sandbox's seccomp filter: a classic-BPF program (the format bwrap's `--seccomp FD` loads)
 * that makes the system calls able to reach into another process of the sandbox fail with
 * EPERM: ptrace, process_vm_readv, process_vm_writev, pidfd_getfd and kcmp. Everything else is
 * allowed (the namespaces, the dropped capabilities and the cgroups confine the rest).
 *
 * Why a filter as well as the non-dumpable agent (bubblewrap/layout.ts, agentNodeCopy): the
 * kernel's ptrace access check already refuses these calls against a non-dumpable process, so
 * the filter is the second wall: it holds for every process of the sandbox, whatever its
 * dumpable state, and it also closes ptrace between a tenant's own processes (strace and gdb do
 * not work in a sandbox).
 *
 * The program checks the architecture first (x86-64 with its x32 numbers, i386, AArch64, ARM):
 * a call made through another ABI than the host's (a 32-bit `int 0x80` on x86-64) is matched
 * against that ABI's numbers; an unknown architecture's calls are refused. Proved inside a real
 * sandbox by test/e2e/sandbox/sandbox-isolation.test.ts ("cannot reach the sandbox agent") and by
 * sandbox-agent/test/seccomp.test.ts (the program run by a BPF interpreter).
 */

/** seccomp_data offsets and return values (linux/seccomp.h, linux/audit.h). */
const NR_OFFSET = 0;
const ARCH_OFFSET = 4;
const RET_ALLOW = 0x7fff0000;
const RET_ERRNO = 0x00050000;
const EPERM = 1;
const X32_BIT = 0x40000000;

/** The calls denied, by name: their numbers per architecture below. */
export const SECCOMP_DENIED = [
  'ptrace',
  'process_vm_readv',
  'process_vm_writev',
  'pidfd_getfd',
  'kcmp',
] as const;
type Denied = (typeof SECCOMP_DENIED)[number];

/** AUDIT_ARCH_* and each denied call's number on it (the kernel's syscall tables). */
const ARCHES: Array<{ name: string; audit: number; x32?: boolean; nr: Record<Denied, number> }> = [
  {
    name: 'x86_64',
    audit: 0xc000003e,
    x32: true,
    nr: { ptrace: 101, process_vm_readv: 310, process_vm_writev: 311, pidfd_getfd: 438, kcmp: 312 },
  },
  {
    name: 'i386',
    audit: 0x40000003,
    nr: { ptrace: 26, process_vm_readv: 347, process_vm_writev: 348, pidfd_getfd: 438, kcmp: 349 },
  },
  {
    name: 'aarch64',
    audit: 0xc00000b7,
    nr: { ptrace: 117, process_vm_readv: 270, process_vm_writev: 271, pidfd_getfd: 438, kcmp: 272 },
  },
  {
    name: 'arm',
    audit: 0x40000028,
    nr: { ptrace: 26, process_vm_readv: 376, process_vm_writev: 377, pidfd_getfd: 438, kcmp: 378 },
  },
];

/** x32 system calls are the x86-64 numbers (mostly) with bit 30 set; 512-547 are x32's own. */
const X32_OWN: Partial<Record<Denied, number>> = {
  ptrace: 521,
  process_vm_readv: 539,
  process_vm_writev: 540,
};

interface Insn {
  code: number;
  k: number;
  /** Jump targets as labels, resolved on encoding. */
  jt?: string;
  jf?: string;
  label?: string;
}

const LD_W_ABS = 0x20; // BPF_LD | BPF_W | BPF_ABS
const JEQ_K = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const RET_K = 0x06; // BPF_RET | BPF_K

/** The filter program as the kernel's `struct sock_filter[]` (8 bytes each, host byte order). */
export function seccompProgram(): Buffer {
  const prog: Insn[] = [{ code: LD_W_ABS, k: ARCH_OFFSET }];
  ARCHES.forEach((a, i) => prog.push({ code: JEQ_K, k: a.audit, jt: `arch${i}`, jf: undefined }));
  prog.push({ code: RET_K, k: RET_ERRNO | EPERM }); // an architecture this filter does not know
  ARCHES.forEach((a, i) => {
    prog.push({ code: LD_W_ABS, k: NR_OFFSET, label: `arch${i}` });
    const numbers = new Set<number>();
    for (const name of SECCOMP_DENIED) {
      numbers.add(a.nr[name]);
      if (a.x32) numbers.add((X32_OWN[name] ?? a.nr[name]) | X32_BIT);
    }
    for (const nr of numbers) prog.push({ code: JEQ_K, k: nr, jt: 'deny' });
    prog.push({ code: RET_K, k: RET_ALLOW });
  });
  prog.push({ code: RET_K, k: RET_ERRNO | EPERM, label: 'deny' });

  const at = new Map<string, number>();
  prog.forEach((insn, i) => insn.label && at.set(insn.label, i));
  const rel = (from: number, label: string | undefined) => {
    if (label === undefined) return 0; // fall through to the next instruction
    const off = at.get(label)! - from - 1;
    if (off < 0 || off > 255) throw new Error(`seccomp program: jump to ${label} out of range`);
    return off;
  };
  const out = Buffer.alloc(prog.length * 8);
  prog.forEach((insn, i) => {
    const o = i * 8;
    if (process.arch === 'x64' || process.arch === 'arm64' || process.arch === 'arm') {
      out.writeUInt16LE(insn.code, o);
      out.writeUInt8(rel(i, insn.jt), o + 2);
      out.writeUInt8(rel(i, insn.jf), o + 3);
      out.writeUInt32LE(insn.k >>> 0, o + 4);
    } else {
      out.writeUInt16BE(insn.code, o);
      out.writeUInt8(rel(i, insn.jt), o + 2);
      out.writeUInt8(rel(i, insn.jf), o + 3);
      out.writeUInt32BE(insn.k >>> 0, o + 4);
    }
  });
  return out;
}
