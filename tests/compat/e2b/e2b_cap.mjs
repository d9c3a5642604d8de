// e2b_cap.mjs: at capacity (e2b_test.sh with MAX_SESSIONS=1 and a short
// create timeout) a second create is E2B's 429 with Retry-After, seen by
// the SDK as a RateLimitError and on the wire; the first sandbox runs on.
import { Sandbox, RateLimitError } from 'e2b'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'

const apiKey = 'e2b_' + randomBytes(20).toString('hex')
const sbx = await Sandbox.create('python', { apiKey, timeoutMs: 120_000 })
await assert.rejects(Sandbox.create('python', { apiKey, timeoutMs: 60_000 }),
  (e) => e instanceof RateLimitError)
const res = await fetch(`${process.env.E2B_API_URL}/sandboxes`, {
  method: 'POST', headers: { 'X-API-KEY': apiKey, 'Content-Type': 'application/json' },
  body: JSON.stringify({ templateID: 'python' }),
})
assert.equal(res.status, 429)
assert.equal(res.headers.get('retry-after'), '5')
assert.equal((await res.json()).code, 429)
assert.equal((await sbx.commands.run('echo alive')).stdout, 'alive\n')
await sbx.kill()
console.error('e2b_cap: ok')
