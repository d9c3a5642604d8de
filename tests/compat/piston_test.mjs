// piston_test.mjs: the npm piston-client (unmodified, pinned in
// package-lock.json) against `airlock serve --http` with real VMs.
// usage: node piston_test.mjs BASE_URL
// Checks: runtimes; execute in python, c and c++; stdin and args; a
// compile error (compile stage only, status RE); a timeout (status TO);
// `version` semver ranges (one fits our python, ^2 does not).
import piston from "piston-client";

const client = piston({ server: process.argv[2] });
const fail = (what, got) => {
  console.error("piston: FAIL:", what, JSON.stringify(got));
  process.exit(1);
};

const runtimes = await client.runtimes();
if (!Array.isArray(runtimes)) fail("runtimes", runtimes);
for (const l of ["python", "c", "c++"])
  if (!runtimes.some((r) => r.language === l)) fail("runtime " + l, runtimes);

// compiles under TCG on a loaded host take longer than Piston's 10 s
const slow = { compileTimeout: 300000, runTimeout: 20000 };
const cases = [
  ["python", "import sys\nprint(input(), sys.argv[1:])",
    { ...slow, stdin: "hi", args: ["a", "b c"] }, "hi ['a', 'b c']\n"],
  ["c", "#include <stdio.h>\nint main(int c,char**v){char s[9];" +
    "scanf(\"%8s\",s);printf(\"%s %s %d\\n\",s,v[1],c);}",
    { ...slow, stdin: "yo", args: ["x", "y"] }, "yo x 3\n"],
  ["c++", "#include <iostream>\nint main(){std::string s;std::cin>>s;" +
    "std::cout<<s<<\"!\"<<std::endl;}", { ...slow, stdin: "cpp" }, "cpp!\n"],
];
const runs = await Promise.all(
  cases.map(([lang, code, opts]) => client.execute(lang, code, opts)));
runs.forEach((res, i) => {
  const want = cases[i][3];
  if (!res.run || res.run.stdout !== want || res.run.code !== 0 ||
      res.run.status !== null || res.language !== runtimes.find(
        (r) => r.language === cases[i][0]).language)
    fail(cases[i][0], res);
});
console.log("piston: python, c, c++ with stdin and args ok");

const ce = await client.execute("c", "int main(){x}", slow);
if (!ce.compile || ce.compile.code === 0 || ce.compile.status !== "RE" ||
    !/error/.test(ce.compile.output) || ce.run)
  fail("compile error", ce);
const to = await client.execute("python", "while True: pass",
  { runTimeout: 1500 });
if (!to.run || to.run.status !== "TO" || to.run.signal !== "SIGKILL")
  fail("timeout", to);
console.log("piston: compile error and timeout ok");

// version: a semver range as Piston matches it (npm semver.satisfies)
const sv = await client.execute("python", "print(7)",
  { ...slow, version: ">=3.10 <4 || 2.x", args: [] });
if (!sv.run || sv.run.stdout !== "7\n" || !/^3\./.test(sv.version))
  fail("version range", sv);
const no = await client.execute("python", "print(7)", { version: "^2" });
if (no.run || !/runtime is unknown/.test(no.message))
  fail("version ^2", no);
console.log("piston: semver version ranges ok");
console.log("piston: ok");
