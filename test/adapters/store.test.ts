import { describe, expect, it } from 'vitest';
import { FileRunStore } from '../../adapters/store/file.js';
import { tempDir } from '../helpers.js';

describe('file run store', () => {
  it('should create, update, list runs and keep their event log', () => {
    const store = new FileRunStore(tempDir());
    store.create({ runId: 'r-1', pid: 1, status: 'running', startedAt: 1, planId: 'p', source: 'plan.json' });
    const log = store.runLog('r-1', { audited: () => true, serialize: (v) => JSON.stringify(v) });
    log.append({ id: 'e0', type: 'run.started', runId: 'r-1', seq: 0, ts: 1, data: {} });
    log.close();
    store.update('r-1', { status: 'completed', finishedAt: 2 });
    expect(store.read('r-1')).toMatchObject({ status: 'completed', finishedAt: 2 });
    expect(store.list().map((r) => r.runId)).toEqual(['r-1']);
    expect(store.events('r-1')).toEqual([{ id: 'e0', type: 'run.started', runId: 'r-1', seq: 0, ts: 1, data: {} }]);
    expect(store.eventsStart('r-1')).toEqual({ seq: 1, facts: [], recent: ['e0'] });
    expect(() => store.create({ runId: 'r-1', pid: 1, status: 'running', startedAt: 1, planId: 'p', source: 'x' })).toThrow('run r-1 already exists');
    expect(() => store.read('../etc')).toThrow('invalid run id "../etc"');
    expect(() => store.read('r-2')).toThrow('no run "r-2"');
  });
});
