/**
 * How a served task's events leave the server (delivery.ts): a request's bus hands each event to
 * every listener (once-listeners once, a throwing one not stopping the others), and a response's
 * writes of one turn go out together while a write of a later turn is not held back.
 */
import { once } from 'node:events';
import { createServer, request, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AgentEvent, type AgentExecutionEvent } from '@a2a-js/sdk/server';
import express from 'express';
import { describe, expect, it } from 'vitest';
import { coalesceWrites, RequestBuses } from '../../adapters/a2aProtocol/delivery.js';

const status = (text: string): AgentExecutionEvent => AgentEvent.statusUpdate({ taskId: 't', contextId: 'c', status: undefined, metadata: { text } });
const textOf = (e: AgentExecutionEvent) => (e.data as { metadata?: { text?: string } }).metadata?.text;

describe('served task delivery', () => {
  it('gives each event to every listener in order: once-listeners once, removed ones no more, a thrower not stopping the rest', async () => {
    const buses = new RequestBuses(() => false);
    const bus = buses.createOrGetByTaskId('t');
    expect(buses.getByTaskId('t')).toBe(bus);
    const seen: string[] = [];
    const first = (e: AgentExecutionEvent) => seen.push(`first ${textOf(e)}`);
    bus.on('event', first);
    bus.on('event', () => {
      throw new Error('a listener failed');
    });
    bus.once('event', (e) => seen.push(`once ${textOf(e)}`));
    bus.on('event', (e) => seen.push(`last ${textOf(e)}`));
    let finished = 0;
    bus.on('finished', () => finished++);
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => uncaught.push(error);
    // the thrower's error surfaces on the next tick, as the SDK's own bus would report it
    const listeners = process.listeners('uncaughtException');
    process.removeAllListeners('uncaughtException');
    process.on('uncaughtException', onUncaught);
    try {
      bus.publish(status('a'));
      bus.off('event', first);
      bus.publish(status('b'));
      bus.finished();
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off('uncaughtException', onUncaught);
      for (const l of listeners) process.on('uncaughtException', l);
    }
    expect(seen).toEqual(['first a', 'once a', 'last a', 'last b']);
    expect(finished).toBe(1);
    expect(uncaught.map((e) => (e as Error).message)).toEqual(['a listener failed', 'a listener failed']);
    bus.removeAllListeners();
    bus.publish(status('c'));
    expect(seen).toHaveLength(4);
    buses.cleanupByTaskId('t');
    expect(buses.getByTaskId('t')).toBeUndefined();
  });

  it("sends a response's writes of one turn together, and each later write without waiting for the end", async () => {
    const app = express();
    app.use(coalesceWrites);
    let next: (() => void) | null = null;
    app.get('/', (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: 1\n\n');
      res.write('data: 2\n\n');
      // the next write only once the client has read these: a write held until the end would hang here
      next = () => {
        res.write('data: 3\n\n');
        next = () => res.end();
      };
    });
    const server = createServer(app).listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const req = request({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, path: '/' });
      req.end();
      const [res] = (await once(req, 'response')) as [IncomingMessage];
      let got = '';
      const ended = new Promise<void>((done) => res.on('end', done));
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        got += chunk;
        if (got.endsWith('data: 2\n\n') || got.endsWith('data: 3\n\n')) next?.();
      });
      await ended;
      expect(got).toBe('data: 1\n\ndata: 2\n\ndata: 3\n\n');
    } finally {
      server.close();
    }
  });
});
