import { type ChildProcess, spawn } from "node:child_process"
import { createInterface } from "node:readline"

export interface ExecResult {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

export interface ExecOptions {
  readonly cwd?: string
  readonly env?: Readonly<Record<string, string | undefined>>
  readonly maxBuffer?: number
  /** Written to the program's standard input, which is then closed. */
  readonly input?: string
}

/**
 * The helper: runs each request line with `execFile` and answers a line with its exit code and output. A parent that
 * goes away closes its stdin, and it exits.
 */
const helperSource = `
const { execFile } = require("node:child_process")
const lines = require("node:readline").createInterface({ input: process.stdin })
lines.on("line", (line) => {
  const { id, file, args, options, input } = JSON.parse(line)
  const child = execFile(file, args, options, (error, stdout, stderr) => {
    const code = error === null ? 0 : typeof error.code === "number" ? error.code : 1
    process.stdout.write(JSON.stringify({ id, code, stdout, stderr }) + "\\n")
  })
  if (input !== undefined) child.stdin.end(input)
})
lines.on("close", () => process.exit(0))
`

interface Helper {
  readonly child: ChildProcess
  readonly pending: Map<number, (result: ExecResult) => void>
}

let helper: Helper | undefined
let nextId = 0

const started = (): Helper => {
  if (helper !== undefined) return helper
  const child = spawn(process.execPath, ["-e", helperSource], { stdio: ["pipe", "pipe", "inherit"] })
  const pending = new Map<number, (result: ExecResult) => void>()
  const own: Helper = { child, pending }
  createInterface({ input: child.stdout! }).on("line", (line) => {
    const { id, ...result } = JSON.parse(line) as ExecResult & { id: number }
    pending.get(id)?.(result)
    pending.delete(id)
  })
  child.on("exit", () => {
    if (helper === own) helper = undefined
    for (const resolve of pending.values()) resolve({ code: 1, stdout: "", stderr: "the spawning helper exited" })
    pending.clear()
  })
  // The helper never keeps a test process alive: it exits with its parent.
  child.unref()
  ;(child.stdin as unknown as { unref?: () => void }).unref?.()
  ;(child.stdout as unknown as { unref?: () => void }).unref?.()
  helper = own
  return own
}

/**
 * `execFile` run by one small helper process instead of the test process: a fork copies the forking process's page
 * tables, so each child of a test worker (hundreds of MiB resident) costs tens of ms of kernel CPU more than the
 * same child of a fresh Node process. Tests that run hundreds of short commands (git, psql) use this.
 */
export const execSmall = (file: string, args: ReadonlyArray<string>, options: ExecOptions = {}): Promise<ExecResult> =>
  new Promise((resolve) => {
    const { child, pending } = started()
    const id = nextId++
    pending.set(id, resolve)
    const { input, ...execOptions } = options
    child.stdin!.write(`${JSON.stringify({ id, file, args, options: execOptions, input })}\n`)
  })
