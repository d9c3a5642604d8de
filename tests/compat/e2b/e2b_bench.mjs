// e2b_bench.mjs: the E2B door's cost (docs/performance.md, "E2B door"):
// create-to-first-output and a command's round trip through E2B's SDK,
// against the same through `airlock session` (the CLI, AIRLOCK_BIN) on
// the same serve, interleaved, ROUNDS rounds (default 5). A benchmark,
// not a test: run by `e2b_test.sh BIN bench`, never by CTest.
import { Sandbox } from 'e2b'
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'

const apiKey = 'e2b_' + randomBytes(20).toString('hex')
const bin = process.env.AIRLOCK_BIN
const rounds = Number(process.env.ROUNDS ?? 5)
const now = () => Number(process.hrtime.bigint()) / 1e6
const cli = (...a) => execFileSync(bin, ['session', ...a], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
const res = { sdk_first: [], cli_first: [], sdk_rt: [], raw_rt: [], cli_rt: [] }

// the same Start without the SDK: one Connect envelope, read to the end
const raw = async (sbx) => {
  const msg = Buffer.from(JSON.stringify({ process: { cmd: '/bin/bash', args: ['-l', '-c', 'true'] } }))
  const b = Buffer.alloc(5 + msg.length); b.writeUInt32BE(msg.length, 1); msg.copy(b, 5)
  const r = await fetch(`${process.env.E2B_SANDBOX_URL}/process.Process/Start`, {
    method: 'POST', body: b, headers: { 'Content-Type': 'application/connect+json',
      'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': sbx.envdAccessToken } })
  await r.arrayBuffer()
}

for (let i = 0; i < rounds; i++) {
  let t = now()
  const sbx = await Sandbox.create('python', { apiKey, timeoutMs: 120_000 })
  await new Promise((resolve, reject) => {
    sbx.commands.run('echo first', { onStdout: () => resolve() }).catch(reject)
  })
  res.sdk_first.push(now() - t)
  for (let k = 0; k < 5; k++) {
    t = now()
    await sbx.commands.run('true')
    res.sdk_rt.push(now() - t)
  }
  for (let k = 0; k < 5; k++) {
    t = now()
    await raw(sbx)
    res.raw_rt.push(now() - t)
  }
  await sbx.kill()

  t = now()
  const id = cli('create', '-t', 'python', '--ttl', '120', '-q').trim()
  cli('exec', id, '--', '/bin/bash', '-l', '-c', 'echo first') // as the SDK sends it
  res.cli_first.push(now() - t)
  for (let k = 0; k < 5; k++) {
    t = now()
    cli('exec', id, '--', '/bin/bash', '-l', '-c', 'true')
    res.cli_rt.push(now() - t)
  }
  cli('rm', id)
}
const q = (a, p) => { const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(p * s.length))] }
for (const [k, v] of Object.entries(res))
  console.log(`${k.padEnd(10)} n=${String(v.length).padStart(2)} p50=${q(v, 0.5).toFixed(0).padStart(6)} ms p90=${q(v, 0.9).toFixed(0).padStart(6)} ms`)
