#!/usr/bin/env node
// The CLI is one bundled CommonJS file with its dependencies (scripts/bundle.mjs), built by `npm ci` in a checkout (the
// root `prepare`) and shipped by `npm pack`: it runs on any Node 20 or newer, with nothing else to resolve.
// `--version` is answered here, before the bundle is compiled.
//
// Compiling the 1.3 MB bundle is about half of a command's start-up, and Node 20 keeps no compiled code between runs
// (`module.enableCompileCache` is Node 22.1+). So the bin compiles the bundle itself as a `vm.Script` with V8's code
// cache, kept under the user's cache dir and keyed by the bundle's content, the Node version and the CPU arch. The
// cache can only ever cost a compile: a missing, stale, corrupt or rejected one means plain compiling (and writing a
// fresh one at exit); a cache dir that cannot be written is ignored.
import { createHash } from "node:crypto"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import * as Vm from "node:vm"

/** `HOSTPLANE_CACHE_DIR` (`off`: no code cache), else the platform's user cache dir (`$XDG_CACHE_HOME`, `~/.cache`, `~/Library/Caches`, `%LOCALAPPDATA%`). */
function cacheDir() {
  const explicit = process.env.HOSTPLANE_CACHE_DIR
  if (explicit) return explicit
  const home = Os.homedir()
  const base =
    process.platform === "win32"
      ? process.env.LOCALAPPDATA || Path.join(home, "AppData", "Local")
      : process.platform === "darwin"
        ? Path.join(home, "Library", "Caches")
        : process.env.XDG_CACHE_HOME || Path.join(home, ".cache")
  return Path.join(base, "hostplane", "code-cache")
}

const digestLength = 32

/**
 * The cache file's bytes after its own SHA-256. V8 checks a cache's header and the source's length, but release builds
 * do not checksum its body, and a damaged body can crash the process: this digest is what turns a damaged file into a
 * plain compile. A file forged with a matching digest is trusted as far as the user's own cache dir is.
 */
function readCache(file) {
  try {
    const data = Fs.readFileSync(file)
    const payload = data.subarray(digestLength)
    const digest = createHash("sha256").update(payload).digest()
    return data.length > digestLength && digest.equals(data.subarray(0, digestLength)) ? payload : undefined
  } catch {
    return undefined
  }
}

function writeCache(file, payload) {
  const temporary = `${file}.${process.pid}.tmp`
  try {
    Fs.mkdirSync(Path.dirname(file), { recursive: true })
    Fs.writeFileSync(temporary, Buffer.concat([createHash("sha256").update(payload).digest(), payload]))
    // Renamed over its place, so a CLI starting meanwhile reads the old cache or the new one, never half of one.
    Fs.renameSync(temporary, file)
  } catch {
    try {
      Fs.rmSync(temporary, { force: true })
    } catch {}
  }
}

function run() {
  const file = fileURLToPath(new URL("../dist/hostplane.cjs", import.meta.url))
  const source = Fs.readFileSync(file, "utf8")
  let cacheFile
  try {
    const dir = cacheDir()
    if (dir !== "off") {
      const key = createHash("sha256")
        .update(`${process.version} ${process.versions.v8} ${process.arch}\0`)
        .update(source)
        .digest("hex")
        .slice(0, 40)
      cacheFile = Path.join(dir, `${key}.v8`)
    }
  } catch {
    cacheFile = undefined
  }
  const cachedData = cacheFile === undefined ? undefined : readCache(cacheFile)
  // The module wrapper Node itself puts around a CommonJS file.
  const script = new Vm.Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
    filename: file,
    ...(cachedData === undefined ? {} : { cachedData })
  })
  if (cacheFile !== undefined && (cachedData === undefined || script.cachedDataRejected)) {
    // At exit, so the functions this command compiled lazily are in the cache too.
    process.once("exit", () => {
      try {
        writeCache(cacheFile, script.createCachedData())
      } catch {}
    })
  }
  const module = { exports: {}, filename: file, id: file, loaded: false }
  script.runInThisContext()(module.exports, createRequire(file), module, file, Path.dirname(file))
}

const args = process.argv.slice(2)
if (args.length === 1 && args[0] === "--version") {
  const { version } = JSON.parse(Fs.readFileSync(new URL("../package.json", import.meta.url), "utf8"))
  process.stdout.write(`hostplane v${version}\n`)
} else {
  run()
}
