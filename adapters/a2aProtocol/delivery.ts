/**
 * How a served task's events leave `a2a serve --a2a` (server.ts): the SDK's event bus of each
 * request, and the HTTP responses that stream them. Both carry every event of a task, 2,004 for a
 * task of 1,000 sub-tasks: what the SDK's own parts spend per event is spent that many times.
 */
import type { AgentExecutionEvent, ExecutionEventBus, ExecutionEventBusManager, ExecutionEventName } from '@a2a-js/sdk/server';
import type { NextFunction, Request, Response } from 'express';

/**
 * One request's bus: the SDK's ExecutionEventBus as lists of listeners. The SDK's own
 * (DefaultExecutionEventBus, on EventTarget) dispatches a DOM event per event, a new Event and
 * its listeners' wrappers each time: 38 ms of the 2,004 events of a task of 1,000 sub-tasks. As
 * there, a listener that throws does not keep the event from the others, and its error is thrown
 * on the next tick (an uncaught exception), not swallowed.
 */
class RequestBus implements ExecutionEventBus {
  readonly #listeners: Record<ExecutionEventName, Array<{ listener: (event: AgentExecutionEvent) => void; once: boolean }>> = { event: [], finished: [] };

  publish(event: AgentExecutionEvent): void {
    this.#emit('event', event);
  }

  finished(): void {
    this.#emit('finished');
  }

  on(name: 'event', listener: (event: AgentExecutionEvent) => void): this;
  on(name: 'finished', listener: () => void): this;
  on(name: ExecutionEventName, listener: (event: AgentExecutionEvent) => void): this {
    this.#listeners[name].push({ listener, once: false });
    return this;
  }

  once(name: 'event', listener: (event: AgentExecutionEvent) => void): this;
  once(name: 'finished', listener: () => void): this;
  once(name: ExecutionEventName, listener: (event: AgentExecutionEvent) => void): this {
    this.#listeners[name].push({ listener, once: true });
    return this;
  }

  off(name: 'event', listener: (event: AgentExecutionEvent) => void): this;
  off(name: 'finished', listener: () => void): this;
  off(name: ExecutionEventName, listener: (event: AgentExecutionEvent) => void): this {
    const list = this.#listeners[name];
    const at = list.findIndex((l) => l.listener === listener);
    if (at >= 0) list.splice(at, 1);
    return this;
  }

  removeAllListeners(name?: ExecutionEventName): this {
    if (name === undefined || name === 'event') this.#listeners.event = [];
    if (name === undefined || name === 'finished') this.#listeners.finished = [];
    return this;
  }

  #emit(name: ExecutionEventName, event?: AgentExecutionEvent): void {
    const list = this.#listeners[name];
    if (list.length === 0) return;
    // the listeners when it was sent: one added or removed meanwhile changes the next event's
    for (const l of list.length === 1 ? [list[0]!] : [...list]) {
      if (l.once) {
        const now = this.#listeners[name];
        const at = now.indexOf(l);
        if (at >= 0) now.splice(at, 1);
      }
      try {
        l.listener(event!);
      } catch (error) {
        process.nextTick(() => {
          throw error;
        });
      }
    }
  }
}

/**
 * A bus per request instead of one per task: the SDK wants every request's stream to begin with
 * the task, which on a shared bus would break a stream still open at AUTH_REQUIRED. The executor
 * gives each bus the events of its task (Held.buses).
 */
export class RequestBuses implements ExecutionEventBusManager {
  readonly #latest = new Map<string, ExecutionEventBus>();

  constructor(readonly holds: (taskId: string) => boolean) {}

  createOrGetByTaskId(taskId: string): ExecutionEventBus {
    const bus = new RequestBus();
    this.#latest.set(taskId, bus);
    return bus;
  }

  getByTaskId(taskId: string): ExecutionEventBus | undefined {
    // a task the runtime holds always has one: the SDK then cancels through the executor (a task
    // resumed after a restart has had no request yet)
    return this.#latest.get(taskId) ?? (this.holds(taskId) ? this.createOrGetByTaskId(taskId) : undefined);
  }

  cleanupByTaskId(taskId: string): void {
    this.#latest.delete(taskId);
  }
}

/**
 * A response's writes of one turn of the event loop go out together: the SDK writes each event of
 * a stream (SSE) on its own, and a sub-task fan-out sends them in bursts (1,000 statuses at once
 * when the sub-tasks start), each write a packet for the client to read. Corked at the first
 * write of a turn, uncorked once its microtasks are done (process.nextTick), nothing waits longer
 * than the turn that wrote it.
 */
export function coalesceWrites(_req: Request, res: Response, next: NextFunction): void {
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  let corked = false;
  res.write = ((...args: unknown[]) => {
    if (!corked && !res.writableEnded) {
      corked = true;
      res.cork();
      process.nextTick(() => {
        corked = false;
        res.uncork();
      });
    }
    return write(...args);
  }) as Response['write'];
  next();
}
