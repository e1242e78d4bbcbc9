// `node [node flags] --conditions=@hostplane/source bench/upload-reader.ts [--size <MiB>] [--bundles <n>]`
//
// The upload's own work without the server around it: the bundle reader and the disk store in this one process, each
// bundle (built first, as bench:upload builds them) read from its file in 64 KiB reads, as a socket hands a body over.
// Prints each bundle's wall time and this process's CPU seconds (every thread: zlib and the writes on the thread pool,
// V8's collector), so a change to the reader, or node and malloc settings (`MALLOC_TRIM_THRESHOLD_=1048576` and npm
// start's flags before the script name), can be compared process against process, alternated. See README.md.
// Runs directly on Node 22 type stripping: erasable TypeScript syntax only.
import { createReadStream } from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { ArtifactStoreDisk, BundleReader } from "@hostplane/adapters-providers"
import { Effect } from "effect"
import { buildBundle } from "./support/bundles.ts"
import { log, makeTempDir, parseOptions, round, runBench } from "./support/harness.ts"
import { loadLine } from "./support/report.ts"

const usage = `usage: bench/upload-reader.ts [--size <MiB>] [--bundles <n>]
  --size <MiB>     compressed size of each bundle (default 95; the limit is 100)
  --bundles <n>    bundles read one after the other, each new bytes (default 4; the first one warms up)`

const { values: parsed, fail } = parseOptions(usage, {
  size: { type: "string", default: "95" },
  bundles: { type: "string", default: "4" }
})
const sizeMiB = Number(parsed.size)
const count = Number(parsed.bundles)
if (!Number.isFinite(sizeMiB) || sizeMiB < 1 || sizeMiB > 99) fail(`invalid --size ${parsed.size}`)
if (!Number.isInteger(count) || count < 1) fail(`invalid --bundles ${parsed.bundles}`)

const cpuSeconds = () => {
  const usage = process.cpuUsage()
  return (usage.user + usage.system) / 1e6
}

const main = async () => {
  log(
    `node ${process.version} ${process.execArgv.join(" ")}, ${Os.cpus().length} CPUs; ${count} bundles of ${sizeMiB} MiB`
  )
  const dir = await makeTempDir("hostplane-bench-upload-reader-")
  const files: Array<string> = []
  for (let index = 0; index < count; index++) {
    files.push((await buildBundle(Path.join(dir, `bundle-${index}.tar.gz`), sizeMiB * 1024 * 1024)).file)
  }
  await Effect.runPromise(
    Effect.gen(function* () {
      const reader = BundleReader.make(yield* ArtifactStoreDisk.make(Path.join(dir, "artifacts")))
      for (const file of files) {
        const cpuBefore = cpuSeconds()
        const started = performance.now()
        const read = yield* reader.read(BundleReader.bodyFrom(createReadStream(file, { highWaterMark: 64 * 1024 })))
        const seconds = (performance.now() - started) / 1000
        console.log(
          `${Path.basename(file)}: ${round(read.bytes / 1024 / 1024, 1)} MiB, ${read.files} files, wall ${seconds.toFixed(2)} s, CPU ${(cpuSeconds() - cpuBefore).toFixed(2)} s; ${loadLine()}`
        )
      }
    })
  )
}

await runBench(main, 900)
