/**
 * A run's pause (`a2a pause`): the agents of the run finish the model call they are in and wait
 * before their next one, until `a2a resume`. A workflow run also stops at the next step boundary
 * (its chart's PAUSED state); a plain run pauses its agents only. The gate is per process: the
 * run's record keeps `paused`, so that a run resumed after a kill comes back paused.
 */
export class PauseGate {
  #paused: { by: string; at: number } | null = null;
  #waiters = new Set<() => void>();

  get paused(): { by: string; at: number } | null {
    return this.#paused;
  }

  /** Pauses; false when it already was. */
  close(by: string, at: number): boolean {
    if (this.#paused) return false;
    this.#paused = { by, at };
    return true;
  }

  /** Lets every waiting agent go on; false when it was not paused. */
  open(): boolean {
    if (!this.#paused) return false;
    this.#paused = null;
    for (const wake of [...this.#waiters]) wake();
    this.#waiters.clear();
    return true;
  }

  /** Resolves at once when not paused, else when resumed; rejects when `signal` aborts (a cancel). */
  whenOpen(signal: AbortSignal): Promise<void> {
    if (!this.#paused) return Promise.resolve();
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const wake = () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        this.#waiters.delete(wake);
        reject(signal.reason);
      };
      this.#waiters.add(wake);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}

/**
 * The pause gates of the runs a process serves, by run id: one for `a2a run`, one per run whose
 * sessions a host runs (a host follows each run's pause over NATS: adapters/transport/pause.ts).
 */
export class PauseGates {
  readonly #gates = new Map<string, PauseGate>();

  gate(runId: string): PauseGate {
    let gate = this.#gates.get(runId);
    if (!gate) {
      gate = new PauseGate();
      this.#gates.set(runId, gate);
    }
    return gate;
  }

  /** Forgets runs that are not paused (a host serves many runs over its life). */
  prune(): void {
    for (const [runId, gate] of this.#gates) if (!gate.paused) this.#gates.delete(runId);
  }
}
