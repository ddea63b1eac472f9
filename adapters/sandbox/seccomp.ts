/**
 * A seccomp filter for the sandbox (bwrap `--seccomp`): it refuses the ways of taking disk space
 * without writing it. `fallocate` (and the preallocation ioctls FS_IOC_RESVSP, FS_IOC_RESVSP64 and
 * FS_IOC_ZERO_RANGE, which do the same) with FALLOC_FL_KEEP_SIZE reserves any amount of blocks
 * in a file of size 0, past RLIMIT_FSIZE (`fileMB`), and at once, before the disk quota's watch
 * (`diskMB`, quota.ts) could notice: `fallocate -n -l 70G f` takes 70 GB in one call. These get
 * EOPNOTSUPP, as on a filesystem without preallocation: glibc's posix_fallocate then writes the
 * blocks instead, and programs that preallocate (linkers, databases) carry on without. io_uring,
 * which could do the same without a system call, gets ENOSYS (libuv and others then use threads).
 *
 * For x86-64 (with its i386 and x32 system calls) and arm64 (with arm32); on another machine no
 * filter is set (docs/how-to/security.md says so).
 */
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const EOPNOTSUPP = 95;
const ENOSYS = 38;

// classic BPF
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const RET_K = 0x06;
const RET_ALLOW = 0x7fff0000;
const RET_ERRNO = 0x00050000;

// struct seccomp_data: nr at 0, arch at 4, args[i] at 16 + 8i (the low 32 bits first, little-endian)
const NR = 0;
const ARCH = 4;
const ARG1_LOW = 24;

const X32 = 0x40000000;
/** _IOW('X', n, struct space_resv): 48 bytes on 64-bit ABIs, 44 on i386 (and x32's compat). */
const PREALLOCATE = [40, 42, 57].flatMap((n) => [0x40305800 | n, 0x402c5800 | n]);
const IO_URING = [425, 426, 427];

interface Abi {
  arch: number;
  fallocate: number[];
  ioctl: number[];
}

const ABIS: Record<string, Abi[]> = {
  x64: [
    { arch: 0xc000003e, fallocate: [285, X32 | 285], ioctl: [16, X32 | 514] },
    { arch: 0x40000003, fallocate: [324], ioctl: [54] },
  ],
  arm64: [
    { arch: 0xc00000b7, fallocate: [47], ioctl: [29] },
    { arch: 0x40000028, fallocate: [352], ioctl: [54] },
  ],
};

type Instruction = { code: number; k: number; jt?: string; jf?: string } | { label: string };

/** The filter for this machine's ABIs, as bytes (struct sock_filter[]), or null on another machine. */
export function filterProgram(machine: string = process.arch): Buffer | null {
  const abis = ABIS[machine];
  if (!abis) return null;
  const code: Instruction[] = [{ code: LD_W_ABS, k: ARCH }];
  abis.forEach((abi, i) => code.push({ code: JEQ_K, k: abi.arch, jt: `abi${i}` }));
  code.push({ code: RET_K, k: RET_ALLOW });
  abis.forEach((abi, i) => {
    code.push({ label: `abi${i}` }, { code: LD_W_ABS, k: NR });
    for (const nr of abi.fallocate) code.push({ code: JEQ_K, k: nr, jt: 'unsupported' });
    for (const nr of IO_URING) code.push({ code: JEQ_K, k: nr, jt: 'nosys' }, { code: JEQ_K, k: X32 | nr, jt: 'nosys' });
    for (const nr of abi.ioctl) code.push({ code: JEQ_K, k: nr, jt: 'ioctl' });
    code.push({ code: RET_K, k: RET_ALLOW });
  });
  code.push({ label: 'ioctl' }, { code: LD_W_ABS, k: ARG1_LOW });
  for (const cmd of PREALLOCATE) code.push({ code: JEQ_K, k: cmd, jt: 'unsupported' });
  code.push({ code: RET_K, k: RET_ALLOW });
  code.push({ label: 'unsupported' }, { code: RET_K, k: RET_ERRNO | EOPNOTSUPP });
  code.push({ label: 'nosys' }, { code: RET_K, k: RET_ERRNO | ENOSYS });

  // labels to instruction indexes, then jumps relative to the next instruction
  const at = new Map<string, number>();
  const program: Array<{ code: number; k: number; jt?: string; jf?: string }> = [];
  for (const ins of code) {
    if ('label' in ins) at.set(ins.label, program.length);
    else program.push(ins);
  }
  const out = Buffer.alloc(program.length * 8);
  program.forEach((ins, i) => {
    const jump = (label: string | undefined) => {
      if (label === undefined) return 0;
      const offset = at.get(label)! - i - 1;
      if (offset < 0 || offset > 255) throw new Error(`seccomp filter: jump to ${label} out of range`);
      return offset;
    };
    out.writeUInt16LE(ins.code, i * 8);
    out.writeUInt8(jump(ins.jt), i * 8 + 2);
    out.writeUInt8(jump(ins.jf), i * 8 + 3);
    out.writeUInt32LE(ins.k >>> 0, i * 8 + 4);
  });
  return out;
}

let file: string | null | undefined;

/** A file holding the filter (written once per process, again if a cleaner of /tmp removed it), which bwrap reads from a descriptor; null on another machine. */
export function filterFile(): string | null {
  if (file === undefined || (file !== null && !existsSync(file))) {
    const program = filterProgram();
    if (!program) file = null;
    else {
      file = join(mkdtempSync(join(tmpdir(), 'a2a-seccomp-')), 'filter.bpf');
      writeFileSync(file, program, { mode: 0o400 });
    }
  }
  return file;
}
