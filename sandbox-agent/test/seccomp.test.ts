/**
 * The seccomp program (src/limits/seccomp.ts) run by a classic-BPF interpreter over
 * seccomp_data: each denied call is EPERM on every architecture it knows (x32 numbers too),
 * other calls are allowed, an unknown architecture is refused. The filter inside a real
 * sandbox: test/e2e/sandbox/sandbox-isolation.test.ts ("cannot reach the sandbox agent").
 */
import { describe, expect, it } from 'vitest';
import { seccompProgram } from '../src/limits/seccomp.js';

const ALLOW = 0x7fff0000;
const EPERM = 0x00050001;

/** Runs the program (ld abs word, jeq k, ret k: all it uses) on one system call. */
function run(prog: Buffer, arch: number, nr: number): number {
  const data = Buffer.alloc(64);
  data.writeInt32LE(nr, 0);
  data.writeUInt32LE(arch >>> 0, 4);
  let a = 0;
  for (let pc = 0; pc * 8 < prog.length; pc++) {
    const code = prog.readUInt16LE(pc * 8);
    const jt = prog.readUInt8(pc * 8 + 2);
    const jf = prog.readUInt8(pc * 8 + 3);
    const k = prog.readUInt32LE(pc * 8 + 4);
    if (code === 0x20) a = data.readUInt32LE(k);
    else if (code === 0x15) pc += a === k ? jt : jf;
    else if (code === 0x06) return k;
    else throw new Error(`unexpected instruction ${code.toString(16)}`);
  }
  throw new Error('fell off the end');
}

describe('seccomp program', () => {
  const prog = seccompProgram();
  const X86_64 = 0xc000003e;
  const I386 = 0x40000003;
  const AARCH64 = 0xc00000b7;

  it('refuses ptrace, process_vm_readv/writev, pidfd_getfd and kcmp with EPERM', () => {
    for (const nr of [101, 310, 311, 438, 312]) expect(run(prog, X86_64, nr)).toBe(EPERM);
    for (const nr of [0x40000000 + 521, 0x40000000 + 539, 0x40000000 + 438])
      expect(run(prog, X86_64, nr)).toBe(EPERM); // x32
    for (const nr of [26, 347, 348, 438, 349]) expect(run(prog, I386, nr)).toBe(EPERM);
    for (const nr of [117, 270, 271, 438, 272]) expect(run(prog, AARCH64, nr)).toBe(EPERM);
  });

  it('allows everything else, and refuses an unknown architecture', () => {
    // read, write, openat, clone, execve, pidfd_open, kill
    for (const nr of [0, 1, 257, 56, 59, 434, 62]) expect(run(prog, X86_64, nr)).toBe(ALLOW);
    expect(run(prog, I386, 101)).toBe(ALLOW); // 101 is ioperm there, not ptrace
    expect(run(prog, 0x12345678, 0)).toBe(EPERM);
  });
});
