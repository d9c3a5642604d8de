// e2b_sdk.mjs: E2B's own `e2b` SDK, unmodified, against airlock serve
// (e2b_test.sh sets E2B_API_URL and E2B_SANDBOX_URL). Each check throws
// on a wrong answer; the script exits non-zero at the first.
import { Sandbox, CommandExitError, TimeoutError, NotFoundError } from 'e2b'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'

const key = () => 'e2b_' + randomBytes(20).toString('hex')
const A = key(), B = key()
const ms = () => Number(process.hrtime.bigint() / 1000000n)
const step = (s) => console.error(`e2b_sdk: ${s}`)

// create with a template, metadata and a timeout
let t = ms()
const sbx = await Sandbox.create('python', {
  apiKey: A, metadata: { run: 'r1', who: 'a' }, timeoutMs: 300_000,
})
step(`created ${sbx.sandboxId} in ${ms() - t} ms`)

// foreground, with onStdout as it comes
const seen = []
t = ms()
const r = await sbx.commands.run('echo hello; echo err >&2; echo $FOO', {
  envs: { FOO: 'bar' }, onStdout: (d) => seen.push(d),
})
step(`run in ${ms() - t} ms`)
assert.equal(r.exitCode, 0)
assert.equal(r.stdout, 'hello\nbar\n')
assert.equal(r.stderr, 'err\n')
assert.ok(seen.join('').includes('hello'))

// a non-zero exit is CommandExitError
await assert.rejects(sbx.commands.run('exit 3'),
  (e) => e instanceof CommandExitError && e.exitCode === 3)

// cwd
assert.equal((await sbx.commands.run('pwd', { cwd: '/tmp' })).stdout, '/tmp\n')

// background with a handle, connect to it, kill it
const bg = await sbx.commands.run('for i in 1 2 3; do echo tick$i; sleep 0.3; done', {
  background: true,
})
const bgr = await bg.wait()
assert.equal(bgr.stdout, 'tick1\ntick2\ntick3\n')
const sleeper = await sbx.commands.run('sleep 100', { background: true })
const again = await sbx.commands.connect(sleeper.pid)
assert.ok(await sbx.commands.kill(sleeper.pid))
await assert.rejects(again.wait())
assert.equal(await sbx.commands.kill(999999), false)

// a timeout that fires
t = ms()
await assert.rejects(sbx.commands.run('sleep 30', { timeoutMs: 2000 }),
  (e) => e instanceof TimeoutError)
step(`timeout fired after ${ms() - t} ms`)
assert.ok(ms() - t < 10000)

// files: text, binary, 20 MiB, list, makeDir, exists, rename, remove
await sbx.files.write('/tmp/e2b/a.txt', 'hello file\n')
assert.equal(await sbx.files.read('/tmp/e2b/a.txt'), 'hello file\n')
const bin = randomBytes(4096)
await sbx.files.write('/tmp/e2b/b.bin', bin)
assert.deepEqual(Buffer.from(await sbx.files.read('/tmp/e2b/b.bin', { format: 'bytes' })), bin)
const big = randomBytes(20 << 20)
t = ms()
await sbx.files.write('/tmp/big.bin', big)
const back = Buffer.from(await sbx.files.read('/tmp/big.bin', { format: 'bytes' }))
step(`20 MiB there and back in ${ms() - t} ms`)
assert.ok(back.equals(big))
assert.equal(await sbx.files.makeDir('/tmp/e2b/sub'), true)
assert.equal(await sbx.files.makeDir('/tmp/e2b/sub'), false)
const names = (await sbx.files.list('/tmp/e2b')).map((e) => e.name).sort()
assert.deepEqual(names, ['a.txt', 'b.bin', 'sub'])
assert.equal(await sbx.files.exists('/tmp/e2b/a.txt'), true)
await sbx.files.rename('/tmp/e2b/a.txt', '/tmp/e2b/c.txt')
assert.equal(await sbx.files.exists('/tmp/e2b/a.txt'), false)
await sbx.files.remove('/tmp/e2b/c.txt')
assert.equal(await sbx.files.exists('/tmp/e2b/c.txt'), false)
await assert.rejects(sbx.files.read('/tmp/nope'), (e) => e instanceof NotFoundError)

// setTimeout, getInfo, list by metadata
const before = (await sbx.getInfo()).endAt
await sbx.setTimeout(400_000)
const info = await sbx.getInfo()
assert.equal(info.sandboxId, sbx.sandboxId)
assert.equal(info.metadata.run, 'r1')
assert.ok(info.endAt > before)
const listed = await Sandbox.list({ apiKey: A, query: { metadata: { run: 'r1' } } }).nextItems()
assert.deepEqual(listed.map((s) => s.sandboxId), [sbx.sandboxId])
assert.equal((await Sandbox.list({ apiKey: A, query: { metadata: { run: 'zz' } } }).nextItems()).length, 0)

// a second key: cannot see, connect to, run in or kill the first's
assert.equal((await Sandbox.list({ apiKey: B }).nextItems()).length, 0)
await assert.rejects(Sandbox.connect(sbx.sandboxId, { apiKey: B }))
await assert.rejects(Sandbox.getInfo(sbx.sandboxId, { apiKey: B }))
assert.equal(await Sandbox.kill(sbx.sandboxId, { apiKey: B }), false)
const other = await Sandbox.create('python', { apiKey: B, timeoutMs: 60_000 })
// B's own envd token does not open A's sandbox
const forged = new Sandbox({ sandboxId: sbx.sandboxId, envdAccessToken: other.envdAccessToken ?? 'x',
  envdVersion: '0.5.7', apiKey: B })
await assert.rejects(forged.commands.run('echo owned'))
// A's sandbox is unharmed and still A's
assert.equal((await sbx.commands.run('echo still')).stdout, 'still\n')
await other.kill()

// malformed Connect requests: Connect's codes, the sandbox unharmed
const url = process.env.E2B_SANDBOX_URL
const hdr = (extra = {}) => ({
  'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983',
  'X-Access-Token': sbx.envdAccessToken, ...extra,
})
const envelope = (flag, len, body) => {
  const b = Buffer.alloc(5 + body.length)
  b[0] = flag; b.writeUInt32BE(len, 1); body.copy(b, 5); return b
}
const stream = async (body, headers = hdr({ 'Content-Type': 'application/connect+json' })) => {
  const res = await fetch(`${url}/process.Process/Start`, { method: 'POST', headers, body })
  const buf = Buffer.from(await res.arrayBuffer())
  return { status: res.status, buf }
}
const endErr = ({ status, buf }) => {
  assert.equal(status, 200)
  assert.equal(buf[0], 2)
  return JSON.parse(buf.subarray(5, 5 + buf.readUInt32BE(1))).error.code
}
const msg = Buffer.from('{"process":{"cmd":"/bin/true"}}')
assert.equal(endErr(await stream(envelope(0, msg.length + 9, msg))), 'invalid_argument')
assert.equal(endErr(await stream(envelope(1, msg.length, msg))), 'invalid_argument')
assert.equal(endErr(await stream(envelope(0, 0xffffffff, msg))), 'resource_exhausted')
assert.equal(endErr(await stream(Buffer.from([0, 0]))), 'invalid_argument')
assert.equal(endErr(await stream(envelope(0, 5, Buffer.from('[1,2]')))), 'invalid_argument')
assert.equal((await stream(envelope(0, msg.length, msg), hdr({ 'Content-Type': 'application/json' }))).status, 415)
const unary = async (path, headers, body = '{}') =>
  fetch(`${url}${path}`, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body })
let res = await unary('/filesystem.Filesystem/WatchDir', hdr())
assert.equal(res.status, 501)
assert.equal((await res.json()).code, 'unimplemented')
res = await unary('/nope.Nope/Do', hdr())
assert.equal(res.status, 404)
res = await unary('/filesystem.Filesystem/Stat', hdr({ 'X-Access-Token': 'wrong' }), '{"path":"/"}')
assert.equal(res.status, 401)
assert.equal((await res.json()).code, 'unauthenticated')
res = await unary('/filesystem.Filesystem/Stat', { 'E2b-Sandbox-Port': '49983' }, '{"path":"/"}')
assert.equal(res.status, 404)
assert.equal((await res.json()).code, 'not_found')
res = await unary('/filesystem.Filesystem/Stat', hdr({ 'E2b-Sandbox-Id': 's-000000000000000000000000' }), '{"path":"/"}')
assert.equal(res.status, 404)
res = await unary('/filesystem.Filesystem/Stat', hdr({ 'Connect-Protocol-Version': '9' }), '{"path":"/"}')
assert.equal((await res.json()).code, 'invalid_argument')
res = await unary('/filesystem.Filesystem/Stat', hdr(), '{"path":' + '['.repeat(100))
assert.equal((await res.json()).code, 'invalid_argument')
res = await unary('/filesystem.Filesystem/Stat', hdr(), '{"path":"' + 'a'.repeat(2 << 20) + '"}')
assert.equal(res.status, 429)
assert.equal((await sbx.commands.run('echo unharmed')).stdout, 'unharmed\n')
step('malformed Connect requests refused, sandbox unharmed')

// connect (A) and kill
const same = await Sandbox.connect(sbx.sandboxId, { apiKey: A })
assert.equal((await same.commands.run('cat /tmp/e2b/b.bin | wc -c')).stdout.trim(), '4096')
assert.equal(await Sandbox.kill(sbx.sandboxId, { apiKey: A }), true)
assert.equal(await Sandbox.kill(sbx.sandboxId, { apiKey: A }), false)
await assert.rejects(Sandbox.getInfo(sbx.sandboxId, { apiKey: A }))
step('ok')
