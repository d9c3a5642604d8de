// e2b_code.mjs: @e2b/code-interpreter's runCode, unmodified, against
// airlock serve (e2b_test.sh): state kept across calls, stdout and
// stderr as they come, the last expression's value, an error with its
// traceback, a context of its own; a chart where the template has
// matplotlib (CHARTS=1).
import { Sandbox } from '@e2b/code-interpreter'
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'

const apiKey = 'e2b_' + randomBytes(20).toString('hex')
const ms = () => Number(process.hrtime.bigint() / 1000000n)
const step = (s) => console.error(`e2b_code: ${s}`)

let t = ms()
const sbx = await Sandbox.create(process.env.E2B_TEMPLATE ?? 'python', { apiKey, timeoutMs: 300_000 })
step(`created in ${ms() - t} ms`)
t = ms()
const out = []
let ex = await sbx.runCode('import math\nx = 41\nprint("hi")\nx + 1', {
  onStdout: (m) => out.push(m.line),
})
step(`first runCode (kernel start) in ${ms() - t} ms`)
if (ex.text !== '42') console.error(JSON.stringify(ex))
assert.equal(ex.text, '42')
assert.deepEqual(ex.logs.stdout, ['hi\n'])
assert.deepEqual(out, ['hi\n'])
t = ms()
ex = await sbx.runCode('def f(n):\n    return n * x\nf(2), math.pi > 3')
step(`second runCode in ${ms() - t} ms`)
assert.equal(ex.text, '(82, True)')
ex = await sbx.runCode('import sys\nprint("warn", file=sys.stderr)\n1/0')
assert.deepEqual(ex.logs.stderr, ['warn\n'])
assert.equal(ex.error.name, 'ZeroDivisionError')
assert.match(ex.error.traceback, /ZeroDivisionError/)
assert.equal((await sbx.runCode('x')).text, '41')
const ctx = await sbx.createCodeContext()
ex = await sbx.runCode('x', { context: ctx })
assert.equal(ex.error.name, 'NameError')
if (process.env.CHARTS === '1') {
  ex = await sbx.runCode('import matplotlib\nmatplotlib.use("Agg")\nimport matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()')
  assert.ok(ex.results.some((r) => r.png && r.png.length > 100))
}
// the commands of the same sandbox still run beside the kernel
assert.equal((await sbx.commands.run('echo beside')).stdout, 'beside\n')
await sbx.kill()
step('ok')

// The example of E2B's README (E2B_API_KEY from the environment, the
// default template), unmodified but for the URLs e2b_test.sh sets.
process.env.E2B_API_KEY = apiKey
{
  const sbx = await Sandbox.create()
  await sbx.runCode('x = 1')
  const execution = await sbx.runCode('x+=1; x')
  console.log(execution.text) // outputs 2
  assert.equal(execution.text, '2')
  await sbx.kill()
}
step('README example ok')
