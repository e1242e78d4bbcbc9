import { type ChildProcess, spawn as spawnHere } from "node:child_process"
import { EventEmitter } from "node:events"
import * as Net from "node:net"

/**
 * One entry of a child's file descriptors: `"pipe"` (the other end comes back as a socket in `stdio`), `"ignore"`,
 * `"collect"` (the helper keeps the first 64 KiB written there and hands them over with the exit, as `collected`),
 * a socket of this process (a connection or a pipe end: the child gets it itself, so its writes go there without
 * passing through the helper), or a file descriptor of this process naming a file (the helper opens it anew through
 * `/proc`).
 */
export type SmallStdio = "pipe" | "ignore" | "collect" | Net.Socket | number

export interface SmallSpawnOptions {
  readonly cwd?: string | undefined
  readonly env?: Readonly<Record<string, string>> | undefined
  /** Starts the child in its own process group, which `kill(signal, { group: true })` signals as a whole. */
  readonly detached?: boolean | undefined
  /** Descriptors 0, 1, 2, ... of the child; at most one socket among them. Default `["pipe", "pipe", "pipe"]`. */
  readonly stdio?: ReadonlyArray<SmallStdio> | undefined
}

export interface SmallExecOptions {
  readonly cwd?: string | undefined
  readonly env?: Readonly<Record<string, string>> | undefined
  readonly detached?: boolean | undefined
  /** Written to the child's standard input, which is then closed. */
  readonly input?: Uint8Array | undefined
  readonly maxBuffer?: number | undefined
}

/** What `execFile` reports: `error.code` is the exit code (a number) or the error's code (`ENOENT`, ...). */
export interface SmallExecResult {
  readonly error: { readonly code: number | string | undefined; readonly message: string } | null
  readonly stdout: Buffer
  readonly stderr: Buffer
}

/**
 * A child started by the helper, shaped like Node's `ChildProcess` where hostplane uses it: `pid`, `stdin`,
 * `stdout`, `stderr`, `stdio`, `exitCode`, `signalCode`, `kill`, and the events `spawn` (the pipes are there from
 * then on), `error`, `exit` and `close` (after the exit and the end of a piped stdout and stderr). The caller may
 * close its own end of a socket it gave once `spawn` was emitted.
 */
export class SmallChild extends EventEmitter {
  pid: number | undefined = undefined
  exitCode: number | null = null
  signalCode: NodeJS.Signals | null = null
  /** What the child wrote to its `"collect"` descriptors (the first 64 KiB), set before `exit`. */
  collected: Buffer = Buffer.alloc(0)
  readonly id: number
  readonly stdio: Array<Net.Socket | null>
  /** @internal */
  helper: Helper | undefined
  /** @internal */
  closed = false

  constructor(id: number, count: number) {
    super()
    this.id = id
    this.stdio = Array.from({ length: count }, () => null)
  }

  get stdin() {
    return this.stdio[0] ?? null
  }
  get stdout() {
    return this.stdio[1] ?? null
  }
  get stderr() {
    return this.stdio[2] ?? null
  }

  /** Signals the child (with `group`, its whole process group: it must have been started `detached`). */
  kill(signal: NodeJS.Signals = "SIGTERM", options: { readonly group?: boolean } = {}): boolean {
    if (this.exitCode !== null || this.signalCode !== null || this.helper === undefined) return false
    this.helper.child.send({ op: "kill", id: this.id, signal, group: options.group === true })
    return true
  }
}

/**
 * The helper: one small Node process started with an IPC channel (advanced serialization: buffers pass as bytes,
 * sockets as descriptors). It spawns what it is asked, hands back the parent ends of `"pipe"` descriptors (reading
 * stopped first, and kept out of Node's flush at exit, so not a byte is read here), reports each exit, and exits
 * when its parent goes away.
 */
const helperSource = `
const { spawn } = require("node:child_process")
const { openSync, closeSync } = require("node:fs")
const children = new Map()
const limit = 64 * 1024
const stopReading = (socket) => {
  const handle = socket && socket._handle
  if (handle && handle.reading) { handle.reading = false; handle.readStop() }
}
const failure = (error) => ({ code: error.code, message: error.message })
process.on("disconnect", () => process.exit(0))
process.on("message", (m, handle) => {
  if (m.op === "kill") {
    const child = children.get(m.id)
    if (child === undefined || child.pid === undefined) return
    try { m.group ? process.kill(-child.pid, m.signal) : child.kill(m.signal) } catch { try { child.kill(m.signal) } catch {} }
    return
  }
  stopReading(handle)
  if (m.op === "exec") {
    // execFile's own options leave out detached: this is execFile with it.
    let child
    const reply = (error, stdout, stderr) => {
      children.delete(m.id)
      process.send({ id: m.id, exec: { error, stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr) } })
    }
    try {
      child = spawn(m.file, m.args, { cwd: m.cwd, env: m.env, detached: m.detached, stdio: "pipe" })
    } catch (error) {
      return reply(failure(error), [], [])
    }
    if (child.pid === undefined) return child.once("error", (error) => reply(failure(error), [], []))
    children.set(m.id, child)
    const outputs = [[], []]
    let size = 0
    let tooLong = false
    ;[child.stdout, child.stderr].forEach((stream, index) => stream.on("data", (chunk) => {
      size += chunk.length
      if (size > m.maxBuffer && !tooLong) { tooLong = true; child.kill("SIGKILL") }
      if (!tooLong) outputs[index].push(chunk)
    }))
    child.once("close", (code, signal) => {
      const error = tooLong ? { code: "ERR_CHILD_PROCESS_STDIO_MAXBUFFER", message: "output longer than " + m.maxBuffer + " bytes" }
        : code === 0 ? null : { code, message: "exited with " + (code ?? signal) }
      reply(error, outputs[0], outputs[1])
    })
    child.stdin.on("error", () => {})
    child.stdin.end(m.input)
    return
  }
  const opened = []
  let child
  try {
    const stdio = m.stdio.map((entry) => {
      if (entry === "socket") return handle
      if (entry === "collect") return "pipe"
      if (typeof entry === "number") { opened.push(openSync("/proc/" + process.ppid + "/fd/" + entry, "r")); return opened[opened.length - 1] }
      return entry
    })
    child = spawn(m.file, m.args, { cwd: m.cwd, env: m.env, detached: m.detached, stdio })
  } catch (error) {
    process.send({ id: m.id, error: failure(error) })
    return
  } finally {
    for (const fd of opened) closeSync(fd)
    if (handle) handle.destroy()
  }
  if (child.pid === undefined) {
    child.once("error", (error) => process.send({ id: m.id, error: failure(error) }))
    return
  }
  children.set(m.id, child)
  const collected = []
  let size = 0
  const ends = []
  m.stdio.forEach((entry, fd) => {
    const stream = child.stdio[fd]
    if (entry === "pipe") {
      // Out of Node's hands until sent: it would destroy stdin at the exit and read the others to their end.
      stopReading(stream)
      child.stdio[fd] = null
      if (fd === 0) child.stdin = null
      process.send({ id: m.id, pipe: fd }, stream)
    } else if (entry === "collect") {
      stream.on("data", (chunk) => { if (size < limit) { collected.push(chunk.subarray(0, limit - size)); size += chunk.length } })
      ends.push(new Promise((resolve) => stream.once("close", resolve)))
    }
  })
  process.send({ id: m.id, spawned: child.pid })
  child.once("exit", (code, signal) => {
    Promise.all(ends).then(() => {
      children.delete(m.id)
      process.send({ id: m.id, exit: code, signal, collected: Buffer.concat(collected) })
    })
  })
})
`

interface Helper {
  readonly child: ChildProcess
  readonly spawned: Map<number, SmallChild>
  readonly execs: Map<number, { readonly resolve: (result: SmallExecResult) => void }>
}

let current: Helper | undefined
let nextId = 0

const gone = (): SmallExecResult => ({
  error: { code: "ECHILD", message: "the spawning helper exited" },
  stdout: Buffer.alloc(0),
  stderr: Buffer.alloc(0)
})

/** Keeps this process alive while the helper runs something for it, and only then. */
const holdWhileBusy = (helper: Helper) => {
  const channel = helper.child.channel as unknown as { ref(): void; unref(): void } | undefined
  if (helper.spawned.size > 0 || helper.execs.size > 0) channel?.ref()
  else channel?.unref()
}

/** `close` once the child exited and its stdout and stderr, when piped here, ended or were destroyed. */
const settle = (child: SmallChild) => {
  if (child.closed || (child.exitCode === null && child.signalCode === null)) return
  if ([child.stdout, child.stderr].some((stream) => stream !== null && !stream.destroyed)) return
  child.closed = true
  child.emit("close", child.exitCode, child.signalCode)
}

const started = (): Helper => {
  if (current !== undefined) return current
  // The last argument names the helper among this process's children (bench/git.ts counts its CPU as the server's).
  const child = spawnHere(process.execPath, ["-e", helperSource, "hostplane-small-spawn"], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
    serialization: "advanced"
  })
  const helper: Helper = { child, spawned: new Map(), execs: new Map() }
  child.on("message", (message: Record<string, unknown>, handle: unknown) => {
    const id = message.id as number
    const exec = helper.execs.get(id)
    if (exec !== undefined && message.exec !== undefined) {
      helper.execs.delete(id)
      holdWhileBusy(helper)
      const result = message.exec as SmallExecResult
      return exec.resolve({ ...result, stdout: Buffer.from(result.stdout), stderr: Buffer.from(result.stderr) })
    }
    const spawned = helper.spawned.get(id)
    if (spawned === undefined) {
      if (handle instanceof Net.Socket) handle.destroy()
      return
    }
    if (typeof message.pipe === "number" && handle instanceof Net.Socket) {
      spawned.stdio[message.pipe] = handle
      if (message.pipe === 1 || message.pipe === 2) handle.once("close", () => settle(spawned))
    } else if (message.spawned !== undefined) {
      spawned.pid = message.spawned as number
      spawned.emit("spawn")
    } else if (message.error !== undefined) {
      helper.spawned.delete(id)
      holdWhileBusy(helper)
      const { code, message: text } = message.error as { code: string; message: string }
      spawned.emit("error", Object.assign(new Error(text), { code }))
    } else if (message.exit !== undefined) {
      helper.spawned.delete(id)
      holdWhileBusy(helper)
      spawned.collected = Buffer.from(message.collected as Uint8Array)
      spawned.exitCode = message.exit as number | null
      spawned.signalCode = message.signal as NodeJS.Signals | null
      if (spawned.exitCode === null && spawned.signalCode === null) spawned.exitCode = 128
      spawned.emit("exit", spawned.exitCode, spawned.signalCode)
      // As Node does at a child's exit: its stdin is closed, and its other descriptors nobody reads are read to
      // their end, so they close. Its stdout and stderr are left to whoever takes them after the `spawn` event.
      spawned.stdin?.destroy()
      for (const stream of spawned.stdio.slice(3)) {
        if (stream !== null && stream.readable && stream.readableFlowing === null) stream.resume()
      }
      settle(spawned)
    }
  })
  child.once("exit", () => {
    if (current === helper) current = undefined
    // Its children outlive it: stop them, and report them ended.
    for (const spawned of helper.spawned.values()) {
      if (spawned.pid !== undefined) {
        try {
          process.kill(spawned.pid, "SIGKILL")
        } catch {}
      }
      spawned.signalCode = "SIGKILL"
      spawned.emit("exit", null, "SIGKILL")
      settle(spawned)
    }
    helper.spawned.clear()
    for (const exec of helper.execs.values()) exec.resolve(gone())
    helper.execs.clear()
  })
  child.on("error", () => {})
  // The helper never keeps this process alive by itself.
  child.unref()
  current = helper
  holdWhileBusy(helper)
  return helper
}

/**
 * `spawn` run by one small helper process beside this one (started on first use, started again if it died): Node
 * spawns with fork(), which copies the forking process's page tables and blocks its event loop until the child has
 * exec'd, so a child of a server of a few hundred MiB costs tens of ms of CPU more than the same child of a small
 * process (bench/README.md, bench:git). The child's descriptors are real pipes or the sockets given: no byte passes
 * through the helper.
 */
export const spawn = (file: string, args: ReadonlyArray<string>, options: SmallSpawnOptions = {}): SmallChild => {
  const stdio = options.stdio ?? ["pipe", "pipe", "pipe"]
  const sockets = stdio.filter((entry) => entry instanceof Net.Socket)
  if (sockets.length > 1) throw new Error("SmallSpawn.spawn takes at most one socket")
  const helper = started()
  const id = nextId++
  const child = new SmallChild(id, stdio.length)
  child.helper = helper
  helper.spawned.set(id, child)
  holdWhileBusy(helper)
  const message = {
    op: "spawn",
    id,
    file,
    args: [...args],
    cwd: options.cwd,
    env: options.env,
    detached: options.detached === true,
    stdio: stdio.map((entry) => (entry instanceof Net.Socket ? "socket" : entry))
  }
  // The socket stays open here too: the caller decides when its own end closes.
  if (sockets[0] !== undefined) helper.child.send(message, sockets[0], { keepOpen: true })
  else helper.child.send(message)
  return child
}

/** A running `exec`: its result, and a way to signal it (with `group`, its whole process group when `detached`). */
export interface SmallExec {
  readonly result: Promise<SmallExecResult>
  readonly kill: (signal: NodeJS.Signals, options?: { readonly group?: boolean }) => void
}

/** `execFile` (buffers out, optional input) run by the same helper as `spawn`. */
export const exec = (file: string, args: ReadonlyArray<string>, options: SmallExecOptions = {}): SmallExec => {
  const helper = started()
  const id = nextId++
  const result = new Promise<SmallExecResult>((resolve) => helper.execs.set(id, { resolve }))
  holdWhileBusy(helper)
  helper.child.send({
    op: "exec",
    id,
    file,
    args: [...args],
    cwd: options.cwd,
    env: options.env,
    detached: options.detached === true,
    input: options.input,
    maxBuffer: options.maxBuffer ?? 1024 * 1024
  })
  return {
    result,
    kill: (signal, killOptions = {}) => {
      if (helper.execs.has(id)) helper.child.send({ op: "kill", id, signal, group: killOptions.group === true })
    }
  }
}

/** The helper's process id while it runs (tests stop it to see it started again). */
export const helperPid = (): number | undefined => current?.child.pid
