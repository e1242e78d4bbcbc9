import { execFile, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { type Manifest, outdated } from "../../../server/scripts/bundle.mjs"

/** The installed bin, which runs the bundle: the CLI exactly as `npm ci` and `npm pack` leave it. */
export const bin = Path.join(import.meta.dirname, "../../bin/hostplane.js")

let built: Promise<void> | undefined

/** Whether the bundle is missing or older than one of the files its manifest (`dist/hostplane.cjs.json`) lists. */
const stale = () => {
  try {
    const manifest = Path.join(import.meta.dirname, "../../dist/hostplane.cjs.json")
    return outdated(JSON.parse(Fs.readFileSync(manifest, "utf8")) as Manifest)
  } catch {
    return true
  }
}

/**
 * Rebuilds the bundle once per test process (scripts/bundle.mjs, as `prepare` does) when a source is newer than it:
 * the tests run the CLI as the current sources make it, without each worker paying esbuild again (about 4 CPU-s).
 */
export const buildBundle = (): Promise<void> =>
  (built ??= stale()
    ? new Promise((resolve, reject) =>
        execFile(
          process.execPath,
          [Path.join(import.meta.dirname, "../../scripts/bundle.mjs")],
          (error, _out, stderr) => (error === null ? resolve() : reject(new Error(`bundle failed: ${stderr}`)))
        )
      )
    : Promise.resolve())

export interface Run {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

export interface RunOptions {
  readonly env: Record<string, string>
  /** Piped to stdin, which is then closed (closed at once without it). */
  readonly input?: string
  readonly cwd?: string
  /** The Node that runs the bin (the test's own by default). */
  readonly node?: string
  /** The bin to run (the checkout's by default; an installed copy's). */
  readonly bin?: string
  readonly onStderr?: (text: string) => void
}

/** Runs `hostplane args` as a child process with only PATH, HOME and `env` in its environment. */
export const hostplane = (args: ReadonlyArray<string>, options: RunOptions): Promise<Run> =>
  new Promise((resolve, reject) => {
    const child = spawn(options.node ?? process.execPath, [options.bin ?? bin, ...args], {
      env: { PATH: process.env["PATH"] ?? "", HOME: Os.tmpdir(), ...options.env },
      stdio: ["pipe", "pipe", "pipe"],
      ...(options.cwd === undefined ? {} : { cwd: options.cwd })
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => (stdout += chunk))
    child.stderr.on("data", (chunk) => {
      stderr += chunk
      options.onStderr?.(stderr)
    })
    child.on("error", reject)
    child.on("close", (code) => resolve({ code, stdout, stderr }))
    child.stdin.end(options.input ?? "")
  })
