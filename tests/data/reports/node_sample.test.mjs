import test from 'node:test';
import assert from 'node:assert';
test('adds', () => { assert.strictEqual(1 + 1, 2); });
test('fails', () => { assert.strictEqual(1 + 1, 3); });
test('skipped', { skip: 'later' }, () => {});
test('todo', { todo: true }, () => { throw new Error('x'); });
test('outer', async (t) => { await t.test('inner', () => {}); });
