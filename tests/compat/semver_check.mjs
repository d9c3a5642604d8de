// semver_check.mjs: semver_table.tsv against the real npm `semver`
// package (the one Piston matches `version` with), so the table that
// test_semver checks our tools/api/doors/semver.c against is npm's own.
// Usage: node semver_check.mjs TABLE SEMVER_DIR
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const [table, dir] = process.argv.slice(2);
const semver = createRequire(import.meta.url)(dir);
let bad = 0, n = 0;
for (const line of readFileSync(table, "utf8").split("\n")) {
  if (!line || line.startsWith("#")) continue;
  const [range, version, want] = line.split("\t");
  const got = semver.satisfies(version, range) ? "1" : "0";
  n++;
  if (got !== want) {
    bad++;
    console.log(`MISMATCH range=${JSON.stringify(range)} ${version}: npm ${got}, table ${want}`);
  }
}
console.log(`${n} rows, ${bad} differ from npm semver`);
process.exit(bad || !n ? 1 : 0);
