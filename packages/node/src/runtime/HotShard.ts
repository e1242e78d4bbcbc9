import type { ChildProcess } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { internetService } from "./Egress.ts"
import { probeSocket } from "./SocketProbe.ts"

/**
 * The hot shard: one workerd process whose static config names each hot project's worker, each on a unix socket of
 * its own, so a request to a hot project is the only invocation in workerd (the loader shard runs two: its router and
 * the loaded worker). Everything else about the worker is the loader shard's: the same entry module and binding
 * modules, the same env (secrets, `ASSETS`, the add-ons through the router's `Bindings`, whose props carry the
 * project), the same egress rule and sandbox, the same log reports.
 *
 * A project becomes hot by sustained traffic, at most `max` at once. A hot project's request goes to the hot shard only
 * while the shard runs exactly the loader key the edge asked for: after a deploy, rollback, secret, grant or access
 * change the key differs, the loader shard serves the request at once, and a new hot process is built in the
 * background; the edge switches to it only once every worker in it answers, and the old process is stopped once its
 * requests are done.
 */

export interface HotSettings {
  /** `SERVICE_WORKER_HOT` (default 8, 0 turns hot projects off): the most projects the hot shard serves at once. */
  readonly max: number
  /**
   * `SERVICE_WORKER_HOT_RATE` (default 50): requests per second a project must reach in two consecutive seconds to
   * become hot; one that stays under a tenth of it for 30 s goes back to the loader shard.
   */
  readonly promoteRate: number
}

/** What the hot shard serves for one project: its modules (the loader's, entry module first) and env. */
export interface HotWorker {
  readonly projectId: string
  readonly key: string
  readonly deploymentId: string
  readonly digest: string
  readonly compatibilityDate: string
  readonly compatibilityFlags: ReadonlyArray<string>
  /** By name; the first is the main module. */
  readonly modules: ReadonlyArray<readonly [string, Readonly<Record<string, unknown>>]>
  readonly secrets: Readonly<Record<string, string>>
  readonly bindings: Readonly<Record<string, unknown>>
}

export interface HotDeps {
  readonly settings: HotSettings
  /** The loader shard's timeout: a hot process silent for the lesser of it and 2 s is taken out of service. */
  readonly timeoutMs: number
  readonly outbound: "public" | "none"
  readonly dir: string
  readonly nodeSocket: string
  readonly routerSource: string
  /** Starts workerd on a config file with the given environment, sandboxed as the loader shards are. */
  readonly spawn: (label: string, config: string, env: Readonly<Record<string, string>>) => ChildProcess
  /** Makes a file the workerd process's own (it may run as another user). */
  readonly own: (path: string) => void
  /** The worker a loader key stands for; `undefined` once the key is forgotten. */
  readonly workerOf: (key: string) => Promise<HotWorker | undefined>
  /** Requests in flight on a socket (counted by the edge until each response ends). */
  readonly inflight: (socket: string) => number
  readonly forget: (socket: string) => void
}

interface HotProcess {
  readonly generation: number
  readonly child: ChildProcess
  /** The worker of each project in this process, by project. */
  readonly workers: ReadonlyMap<string, { readonly key: string; readonly socket: string }>
  readonly startedAt: number
  lastHealthy: number
}

/**
 * A string in Cap'n Proto's text format: quotes, backslashes and control characters escaped, everything else as
 * UTF-8 (the format has no `\u` escape).
 */
export const capnpText = (text: string): string =>
  `"${text.replace(/[\\"\u0000-\u001f\u007f]/g, (char) => {
    switch (char) {
      case "\\":
        return "\\\\"
      case '"':
        return '\\"'
      case "\n":
        return "\\n"
      case "\t":
        return "\\t"
      case "\r":
        return "\\r"
      default:
        return `\\x${char.charCodeAt(0).toString(16).padStart(2, "0")}`
    }
  })}"`

const moduleLine = (name: string, module: Readonly<Record<string, unknown>>): string | undefined => {
  const named = `name = ${capnpText(name)}`
  if (typeof module.js === "string") return `(${named}, esModule = ${capnpText(module.js)})`
  if (typeof module.text === "string") return `(${named}, text = ${capnpText(module.text)})`
  if ("json" in module) return `(${named}, json = ${capnpText(JSON.stringify(module.json))})`
  if (typeof module.wasm === "string")
    return `(${named}, wasm = 0x"${Buffer.from(module.wasm, "base64").toString("hex")}")`
  return undefined
}

/**
 * The hot process's config and the environment it reads its values from. Secret values and the add-ons' settings
 * (a database's connection string holds its password) are `fromEnvironment` bindings, so they are never in a file:
 * the config holds only code and names, and is removed as soon as workerd has read it.
 */
export const hotConfig = (options: {
  readonly workers: ReadonlyArray<HotWorker>
  readonly sockets: ReadonlyArray<string>
  readonly nodeSocket: string
  readonly routerSource: string
  readonly outbound: "public" | "none"
}): { readonly config: string; readonly env: Record<string, string> } => {
  const env: Record<string, string> = {}
  const services: Array<string> = []
  const sockets: Array<string> = []
  options.workers.forEach((worker, index) => {
    const props = capnpText(
      JSON.stringify({ projectId: worker.projectId, deploymentId: worker.deploymentId, digest: worker.digest })
    )
    const bindings: Array<string> = []
    Object.entries(worker.secrets).forEach(([name, value], at) => {
      const variable = `HOSTPLANE_W${index}_S${at}`
      env[variable] = value
      bindings.push(`(name = ${capnpText(name)}, fromEnvironment = ${capnpText(variable)})`)
    })
    env[`HOSTPLANE_W${index}_BINDINGS`] = JSON.stringify(worker.bindings)
    bindings.push(`(name = "__hostplaneBindings", fromEnvironment = "HOSTPLANE_W${index}_BINDINGS")`)
    bindings.push(
      `(name = "ASSETS", service = (name = "router", entrypoint = "Assets", props = (json = ${props})))`,
      `(name = "__hostplane", service = (name = "router", entrypoint = "Bindings", props = (json = ${props})))`
    )
    // The entry module keeps each invocation's console lines apart with AsyncLocalStorage, as on the loader shard.
    const flags = worker.compatibilityFlags.some((flag) =>
      ["nodejs_als", "nodejs_compat", "nodejs_compat_v2"].includes(flag)
    )
      ? worker.compatibilityFlags
      : [...worker.compatibilityFlags, "nodejs_als"]
    const modules = worker.modules.flatMap(([name, module]) => moduleLine(name, module) ?? [])
    services.push(
      `(name = "w${index}", worker = (
      modules = [${modules.join(",\n        ")}],
      compatibilityDate = ${capnpText(worker.compatibilityDate)},
      compatibilityFlags = [${flags.map(capnpText).join(", ")}],
      bindings = [${bindings.join(", ")}],
      globalOutbound = ${options.outbound === "public" ? '"internet"' : '"nowhere"'},
    ))`
    )
    // The edge names the scheme the client used in x-forwarded-proto, as the loader shard's router takes it from the
    // invoke header: the worker's request.url is the client's. workerd parses the invoke header into `request.cf`
    // and drops it, so the entry module reads the invocation id and user handle without copying the request.
    sockets.push(
      `(name = "w${index}", address = ${capnpText(`unix:${options.sockets[index]!}`)}, http = (forwardedProtoHeader = "x-forwarded-proto", cfBlobHeader = "x-hostplane-invoke"), service = "w${index}")`
    )
  })
  const config = `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "router", worker = .router),
    (name = "node", external = (address = ${capnpText(`unix:${options.nodeSocket}`)}, http = ())),
    ${internetService},
    (name = "nowhere", network = (allow = [])),
    ${services.join(",\n    ")}
  ],
  sockets = [
    ${sockets.join(",\n    ")}
  ],
);
const router :Workerd.Worker = (
  modules = [ (name = "router.js", esModule = ${capnpText(options.routerSource)}) ],
  compatibilityDate = "2026-11-01",
  compatibilityFlags = ["experimental"],
  bindings = [ (name = "NODE", service = "node") ],
  globalOutbound = "nowhere",
);
`
  return { config, env }
}

/** Whether the worker on a hot socket answers: the entry module answers a check without calling the tenant. */
const probeWorker = (socket: string, timeoutMs: number) =>
  probeSocket(socket, { path: "/", headers: { "x-hostplane-check": "1" }, status: 204 }, timeoutMs)

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export interface Hot {
  /**
   * The hot socket serving this key of the project, or `undefined` for the loader shard. Counts the request toward the
   * project's promotion.
   */
  readonly socketOf: (projectId: string, key: string) => string | undefined
  /** The sockets of the current hot process. */
  readonly sockets: () => ReadonlyArray<string>
  /** The projects the current hot process serves, and its pid. */
  readonly state: () => {
    readonly pid: number | undefined
    readonly projects: ReadonlyArray<string>
    readonly builds: number
  }
  readonly stop: () => Promise<void>
}

export const makeHot = (deps: HotDeps): Hot => {
  const { settings } = deps
  /** How long a hot process may leave its probe unanswered before requests go back to the loader shard. */
  const hangMs = Math.min(2_000, deps.timeoutMs)
  const counts = new Map<string, number>()
  const previous = new Map<string, number>()
  /** The key each project's requests asked for last. */
  const wanted = new Map<string, string>()
  /** The hot projects, with when each was last busy. */
  const hot = new Map<string, number>()
  /** Keys whose worker failed to start in a hot process: they stay on the loader shard. */
  const refused = new Set<string>()
  let current: HotProcess | undefined
  const draining = new Set<HotProcess>()
  let generation = 0
  let builds = 0
  let building = false
  let again = false
  let stopped = false
  let scheduled: ReturnType<typeof setTimeout> | undefined
  let crashes = 0

  const schedule = (delayMs = 1_000) => {
    if (stopped) return
    // Debounced: a burst of changes (deploys in a row, a deploy then its secrets) builds one process, a second after
    // it ends; meanwhile the loader shard serves the project, and no build takes CPU from the deploys.
    if (scheduled !== undefined) clearTimeout(scheduled)
    scheduled = setTimeout(() => {
      scheduled = undefined
      void build()
    }, delayMs)
  }

  const socketOf = (projectId: string, key: string) => {
    counts.set(projectId, (counts.get(projectId) ?? 0) + 1)
    const live = current?.workers.get(projectId)
    if (live !== undefined && live.key === key) return live.socket
    if (wanted.get(projectId) !== key) {
      wanted.set(projectId, key)
      if (hot.has(projectId)) schedule()
    }
    return undefined
  }

  /** Each second: the projects whose traffic held up for two seconds become hot, quiet ones go back. */
  const tick = () => {
    const now = Date.now()
    let changed = false
    let promoted = false
    const rates = new Map(counts)
    counts.clear()
    for (const [projectId, rate] of rates) {
      if (hot.has(projectId)) {
        if (rate * 10 >= settings.promoteRate) hot.set(projectId, now)
        continue
      }
      if (rate < settings.promoteRate || (previous.get(projectId) ?? 0) < settings.promoteRate) continue
      const key = wanted.get(projectId)
      if (key === undefined || refused.has(key)) continue
      if (hot.size >= settings.max) {
        // Full: the quietest hot project gives way to one at least twice as busy.
        let quietest: [string, number] | undefined
        for (const [other] of hot) {
          const otherRate = rates.get(other) ?? 0
          if (quietest === undefined || otherRate < quietest[1]) quietest = [other, otherRate]
        }
        if (quietest === undefined || quietest[1] * 2 > rate) continue
        hot.delete(quietest[0])
      }
      hot.set(projectId, now)
      changed = true
      promoted = true
    }
    for (const [projectId, busyAt] of hot) {
      if (now - busyAt < 30_000) continue
      hot.delete(projectId)
      changed = true
    }
    previous.clear()
    for (const [projectId, rate] of rates) previous.set(projectId, rate)
    // A project that just became busy is built for at once: until its hot process answers, the loader shard serves
    // it at about twice the CPU per request. The debounce is for changes in a burst (deploys, a project going back).
    if (changed) schedule(promoted && scheduled === undefined ? 0 : 1_000)
  }
  const ticker = setInterval(tick, 1_000)
  ticker.unref()

  /** Takes a process out of service; it is stopped once it has had no request in flight for a second. */
  const retire = (process: HotProcess) => {
    if (current === process) current = undefined
    draining.add(process)
    const started = Date.now()
    let idleSince: number | undefined
    const timer = setInterval(() => {
      const busy = [...process.workers.values()].some((worker) => deps.inflight(worker.socket) > 0)
      idleSince = busy ? undefined : (idleSince ?? Date.now())
      const idle = idleSince !== undefined && Date.now() - idleSince >= 1_000
      if (!stopped && !idle && Date.now() - started < 10 * 60_000) return
      clearInterval(timer)
      draining.delete(process)
      process.child.kill("SIGKILL")
      for (const worker of process.workers.values()) {
        deps.forget(worker.socket)
        Fs.rmSync(worker.socket, { force: true })
      }
    }, 100)
    timer.unref()
  }

  const build = async (): Promise<void> => {
    if (stopped) return
    if (building) {
      again = true
      return
    }
    building = true
    try {
      const chosen: Array<HotWorker> = []
      for (const projectId of hot.keys()) {
        const key = wanted.get(projectId)
        if (key === undefined || refused.has(key)) continue
        const worker = await deps.workerOf(key)
        if (worker !== undefined) chosen.push(worker)
      }
      // Stopped while the workers were read: its directory may be gone, and no process is wanted any more.
      if (stopped) return
      const same =
        current !== undefined &&
        current.workers.size === chosen.length &&
        chosen.every((worker) => current!.workers.get(worker.projectId)?.key === worker.key)
      if (same) return
      if (chosen.length === 0) {
        if (current !== undefined) retire(current)
        return
      }
      generation += 1
      builds += 1
      const sockets = chosen.map((_, index) => Path.join(deps.dir, `hot-${generation}-${index}.sock`))
      for (const socket of sockets) Fs.rmSync(socket, { force: true })
      const { config, env } = hotConfig({
        workers: chosen,
        sockets,
        nodeSocket: deps.nodeSocket,
        routerSource: deps.routerSource,
        outbound: deps.outbound
      })
      const file = Path.join(deps.dir, `hot-${generation}.capnp`)
      Fs.writeFileSync(file, config, { mode: 0o600 })
      deps.own(file)
      const child = deps.spawn(`hot ${generation}`, file, env)
      const next: HotProcess = {
        generation,
        child,
        workers: new Map(
          chosen.map((worker, index) => [worker.projectId, { key: worker.key, socket: sockets[index]! }])
        ),
        startedAt: Date.now(),
        lastHealthy: Date.now()
      }
      let answered = false
      try {
        const deadline = Date.now() + 60_000
        while (!stopped && child.exitCode === null && child.signalCode === null && Date.now() < deadline) {
          // workerd binds its sockets after reading the whole config: from then on the file has no use.
          if (Fs.existsSync(sockets[0]!)) Fs.rmSync(file, { force: true })
          const all = await Promise.all(sockets.map((socket) => probeWorker(socket, 1_000)))
          if (all.every(Boolean)) {
            answered = true
            break
          }
          await sleep(50)
        }
      } finally {
        Fs.rmSync(file, { force: true })
      }
      if (!answered || stopped) {
        child.kill("SIGKILL")
        for (const socket of sockets) Fs.rmSync(socket, { force: true })
        if (stopped) return
        // A worker that starts on the loader shard but not here (the deploy check loads it alone): the projects new
        // to this build stay on the loader shard.
        const fresh = chosen.filter((worker) => current?.workers.get(worker.projectId)?.key !== worker.key)
        for (const worker of fresh.length > 0 ? fresh : chosen) refused.add(worker.key)
        again = true
        return
      }
      child.once("exit", () => {
        if (current !== next) return
        // Killed or crashed: requests go to the loader shard at once, and a new process is built.
        current = undefined
        crashes = Date.now() - next.startedAt < 10_000 ? crashes + 1 : 0
        for (const worker of next.workers.values()) {
          deps.forget(worker.socket)
          Fs.rmSync(worker.socket, { force: true })
        }
        schedule(Math.min(30_000, 250 * 2 ** crashes))
      })
      const old = current
      current = next
      if (old !== undefined) retire(old)
    } finally {
      building = false
      if (again) {
        again = false
        schedule()
      }
    }
  }

  // Health: a hot process that stops answering (a busy loop holds its only thread) is taken out of service at once;
  // its requests in flight end at the edge's deadline, as on the loader shard, and a new process is built.
  let probing = false
  const health = setInterval(() => {
    const running = current
    const first = running?.workers.values().next().value
    if (probing || running === undefined || first === undefined) return
    probing = true
    void probeWorker(first.socket, hangMs)
      .then((ok) => {
        if (ok) running.lastHealthy = Date.now()
        else if (Date.now() - running.lastHealthy >= hangMs && current === running) {
          retire(running)
          schedule()
        }
      })
      .finally(() => (probing = false))
  }, 250)
  health.unref()

  return {
    socketOf: settings.max > 0 ? socketOf : () => undefined,
    sockets: () => (current === undefined ? [] : [...current.workers.values()].map((worker) => worker.socket)),
    state: () => ({
      pid: current?.child.pid,
      projects: current === undefined ? [] : [...current.workers.keys()],
      builds
    }),
    stop: async () => {
      stopped = true
      clearInterval(ticker)
      clearInterval(health)
      if (scheduled !== undefined) clearTimeout(scheduled)
      const all = [...draining, ...(current === undefined ? [] : [current])]
      current = undefined
      await Promise.all(
        all.map(
          (process) =>
            new Promise<void>((resolve) => {
              const child = process.child
              if (child.exitCode !== null || child.signalCode !== null) return resolve()
              child.once("exit", () => resolve())
              child.kill("SIGKILL")
            })
        )
      )
    }
  }
}
