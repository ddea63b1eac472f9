/** A nats-server's live heap by allocating function, from its Go profiling port (prof_port). */

/** The key under which whatever a RAFT group holds is counted. */
export const RAFT = 'RAFT groups (server.startRaftNode and below)';

/**
 * In-use bytes by the innermost function of the server's own code (github.com/nats-io) in each stack,
 * estimated from the samples: Go's heap profile samples one allocation per 512 KB on average, and its
 * text form (debug=1) gives the raw samples, which a reader must scale by 1 / (1 - e^(-size/rate))
 * as `go tool pprof` does (unscaled, small objects such as message ids count for almost nothing:
 * read raw, this profile once put the live heap at 15-17 MB where it was 39 MB and growing). Read
 * after a forced collection (gc=1): what is live, not garbage waiting.
 */
export async function heap(port: number): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${port}/debug/pprof/heap?debug=1&gc=1`)).text();
  const rate = Number(/@ heap\/(\d+)/.exec(text)?.[1] ?? 1048576) / 2;
  const out = new Map<string, number>();
  for (const block of text.split(/\n(?=\d+: \d+ \[)/)) {
    const m = /^(\d+): (\d+) \[(\d+): (\d+)\] @/m.exec(block);
    if (!m) continue;
    const count = Number(m[1]);
    const bytes = Number(m[2]);
    if (bytes === 0 || count === 0) continue;
    const scaled = bytes / (1 - Math.exp(-bytes / count / rate));
    const frames = [...block.matchAll(/#\s+0x[0-9a-f]+\s+(\S+)\+0x[0-9a-f]+\s+(\S+)/g)].map((f) => f[1]!);
    const own = frames.filter((f) => f.includes('nats-server'));
    // what a RAFT group holds is counted as one (its clients, queues, timers): one per replicated stream or consumer
    const key = frames.some((f) => f.endsWith('.startRaftNode')) ? RAFT : own.slice(0, 2).join(' < ') || frames[0] || '?';
    out.set(key, (out.get(key) ?? 0) + scaled);
  }
  return out;
}

/** The whole live heap (MB) and the part RAFT groups hold. */
export async function liveHeap(port: number): Promise<{ totalMB: number; raftMB: number }> {
  const byFunction = await heap(port);
  const total = [...byFunction.values()].reduce((a, b) => a + b, 0);
  return { totalMB: total / 1048576, raftMB: (byFunction.get(RAFT) ?? 0) / 1048576 };
}
