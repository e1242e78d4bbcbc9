import { execFile, spawn } from "node:child_process"
import * as Os from "node:os"
import * as Path from "node:path"

/** The installed bin, which runs the bundle: the CLI exactly as `npm ci` and `npm pack` leave it. */
export const bin = Path.join(import.meta.dirname, "../../bin/hostplane.js")

let built: Promise<void> | undefined

/** Rebuilds the bundle from the current sources once per test process (scripts/bundle.mjs, as `prepare` does). */
export const buildBundle = (): Promise<void> =>
  (built ??= new Promise((resolve, reject) =>
    execFile(process.execPath, [Path.join(import.meta.dirname, "../../scripts/bundle.mjs")], (error, _out, stderr) =>
      error === null ? resolve() : reject(new Error(`bundle failed: ${stderr}`))
    )
  ))

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
