import { describe, expect, it } from 'vitest';
import { ReplayGuard } from '../../../adapters/seed004/replays.js';

describe('ReplayGuard', () => {
  it('should let a message id through once per sender, report its first replay, then drop it silently', () => {
    const guard = new ReplayGuard();
    expect(guard.check('alpha', 'm-1')).toBe('new');
    expect(guard.check('alpha', 'm-1')).toBe('replay');
    expect(guard.check('alpha', 'm-1')).toBe('replay-again');
    expect(guard.check('alpha', 'm-1')).toBe('replay-again');
    // the same id from another sender is another message
    expect(guard.check('beta', 'm-1')).toBe('new');
    expect(guard.size).toBe(2);
  });

  it('should keep the latest ids of each sender only', () => {
    const guard = new ReplayGuard({ perSender: 3 });
    for (const id of ['1', '2', '3', '4']) expect(guard.check('alpha', id)).toBe('new');
    expect(guard.size).toBe(3);
    expect(guard.check('alpha', '1')).toBe('new'); // forgotten: the oldest went first
    expect(guard.check('alpha', '4')).toBe('replay');
  });

  it('should stay within its total, forgetting the sender heard from least recently first', () => {
    const guard = new ReplayGuard({ perSender: 4, total: 6 });
    for (const id of ['a1', 'a2', 'a3']) guard.check('alpha', id);
    for (const id of ['b1', 'b2', 'b3']) guard.check('beta', id);
    guard.check('alpha', 'a4'); // alpha heard from last: beta's oldest goes
    expect(guard.size).toBe(6);
    expect(guard.check('alpha', 'a1')).toBe('replay');
    expect(guard.check('beta', 'b1')).toBe('new');
    // a flood from one sender never grows it past the total
    for (let i = 0; i < 1_000; i++) guard.check(`flood-${i}`, 'x');
    expect(guard.size).toBe(6);
  });
});
