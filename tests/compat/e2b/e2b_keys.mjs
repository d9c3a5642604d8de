// e2b_keys.mjs: E2B API keys issued as tokens of http.tokens_file
// (e2b_test.sh keys): each names its principal; an unknown or malformed
// key is refused; a principal sees and kills only its own sandboxes.
import { Sandbox, AuthenticationError } from 'e2b'
import assert from 'node:assert/strict'

const alice = process.env.KEY_ALICE, bob = process.env.KEY_BOB
const api = process.env.E2B_API_URL
await assert.rejects(Sandbox.list({ apiKey: 'e2b_' + '0'.repeat(40) }).nextItems(),
  (e) => e instanceof AuthenticationError)
let res = await fetch(`${api}/v2/sandboxes`, { headers: { 'X-API-KEY': 'not-a-key' } })
assert.equal(res.status, 401)
res = await fetch(`${api}/v2/sandboxes`)
assert.equal(res.status, 401)
const sbx = await Sandbox.create('python', { apiKey: alice, timeoutMs: 120_000 })
assert.equal((await Sandbox.list({ apiKey: alice }).nextItems()).length, 1)
assert.equal((await Sandbox.list({ apiKey: bob }).nextItems()).length, 0)
assert.equal(await Sandbox.kill(sbx.sandboxId, { apiKey: bob }), false)
assert.equal((await sbx.commands.run('echo mine')).stdout, 'mine\n')
assert.equal(await Sandbox.kill(sbx.sandboxId, { apiKey: alice }), true)
console.error('e2b_keys: ok')
