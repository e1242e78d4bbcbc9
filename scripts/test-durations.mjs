// Writes test/durations.json, each test file's seconds in a whole run, from vitest's record of its last run in this
// checkout (node_modules/.vite/vitest/*/results.json, what vitest itself orders by when it has one). The test
// sequencer (test/support/SlowFilesFirst.ts) starts the slowest files first by these times, where a fresh clone (CI)
// has no record. Take them after a whole `npm test` on the machine CI runs on, not after single files: a file's time
// beside another one is what counts.
//
//   npm test; node scripts/test-durations.mjs [results.json]
import * as Fs from "node:fs"
import * as Path from "node:path"

const root = Path.join(import.meta.dirname, "..")
const cache = Path.join(root, "node_modules", ".vite", "vitest")
const newest = () =>
  (Fs.existsSync(cache) ? Fs.readdirSync(cache) : [])
    .map((dir) => Path.join(cache, dir, "results.json"))
    .filter((file) => Fs.existsSync(file))
    .sort((a, b) => Fs.statSync(b).mtimeMs - Fs.statSync(a).mtimeMs)[0]
const source = process.argv[2] ?? newest()
if (source === undefined) {
  console.error("no vitest results in node_modules/.vite/vitest: run npm test first, or name a results.json")
  process.exit(2)
}
const { projects } = JSON.parse(Fs.readFileSync(source, "utf8"))
const seconds = Object.values(projects)
  .flatMap((project) => Object.entries(project.files))
  .filter(([file]) => Fs.existsSync(Path.join(root, file)))
  .map(([file, result]) => [file, Math.round(result.duration / 100) / 10])
  .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
const target = Path.join(root, "test", "durations.json")
Fs.writeFileSync(target, JSON.stringify(Object.fromEntries(seconds), null, 2) + "\n")
console.log(
  `${target} from ${source}: ${seconds.length} files, ${Math.round(seconds.reduce((s, [, d]) => s + d, 0))} s`
)
