// What `npm start` runs (`npm run start:node` with the argument `node`): the binary's bundle (`bundle.mjs`), built
// again first when one of its sources is newer than it, so an edited source runs at the next start; then the bundle
// itself, in this process, so signals and the exit code are the binary's own. V8's compile cache of the bundle sits
// beside it: a later start skips compiling what an earlier one compiled (Node checks each entry against the source).
// The package.json line that runs this file sets the server's memory knobs, each measured in docs/node.md ("What the
// node's memory is made of") with its CPU cost: `--heap-growing-percent=50` (the old generation's next collection at
// 1.5x what survived the last, not up to 4x) and MALLOC_TRIM_THRESHOLD_ (glibc gives a thread arena's free top back
// above 1 MiB; left to itself it raises that bound to twice its largest freed mmap, up to 64 MiB, and kept 30-40 MiB
// of freed memory after a burst).
import * as Module from "node:module"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import { binaries, bundle, isStale, root } from "./bundle.mjs"

const name = process.argv[2] ?? "server"
if (!Object.hasOwn(binaries, name)) {
  console.error(`start.mjs runs one of ${Object.keys(binaries).join(", ")}, not ${name}`)
  process.exit(2)
}
let file = Path.join(root, binaries[name].bundle)
if (isStale(name)) {
  console.error(`${binaries[name].bundle} is older than its sources: bundling them first`)
  file = await bundle(name)
}
// NODE_COMPILE_CACHE, when set, already chose a folder.
if (process.env.NODE_COMPILE_CACHE === undefined)
  Module.enableCompileCache?.(Path.join(Path.dirname(file), "compile-cache"))
await import(pathToFileURL(file).href)
