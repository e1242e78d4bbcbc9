import { Deployments } from "@hostplane/core"
import * as Edge from "../edge/AssetPath.ts"
import { Config, Context, Duration, Effect, Layer, Option, Result, Stream } from "effect"
import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import { createHash, randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import { Readable } from "node:stream"
import { fileURLToPath } from "node:url"
import { bindingModules } from "../bindings/Bindings.ts"
import { type HotSettings, type HotWorker, makeHot } from "./HotShard.ts"
import { type LogCollector, makeCollector } from "./LogCollector.ts"
import { workerdBinary } from "./WorkerdBinary.ts"
import { internetService } from "./Egress.ts"
import { probeSocket } from "./SocketProbe.ts"

/** `SERVICE_WORKER_OUTBOUND`: what a worker's own `fetch()`/`connect()` may reach. */
export type Outbound = "public" | "none"

export interface RuntimeSettings {
  /** `SERVICE_WORKERS` (default on): off answers every worker request 503 `worker_unavailable`. */
  readonly enabled: boolean
  /** `SERVICE_WORKER_SHARDS` (default `defaultShards()`): workerd processes; projects are assigned by hash. */
  readonly shards: number
  /** `SERVICE_WORKER_TIMEOUT` (default 30 seconds): no response started by then is 504; a shard silent that long restarts. */
  readonly timeoutMs: number
  readonly outbound: Outbound
  /** `SERVICE_WORKER_SANDBOX` (default `auto`: bubblewrap when `bwrap` is installed), `off` runs workerd bare. */
  readonly sandbox: "auto" | "off"
  /** The workerd binary to run; the pinned npm package's by default (`hostplane dev` may find one elsewhere). */
  readonly binary?: string
  /**
   * A shard holding this many isolates that serve nothing (code no longer current, or idle for `idleMs`) is replaced
   * by a fresh process, without dropping a request: workerd never unloads a loader's isolate (about 2.5 MiB each).
   * Default 16. A shard whose wasted isolates outnumber those in use is replaced from a quarter of this on, since the
   * fresh process reloads only the isolates in use.
   */
  readonly rotateAfterStale?: number
  /**
   * `SERVICE_WORKER_IDLE` (default 10 minutes): an isolate whose project had no request for this long counts as wasted
   * toward `rotateAfterStale`; its project pays one cold load (about 30 ms) at its next request.
   */
  readonly idleMs?: number
  /** Projects served by the hot shard (a static config, one invocation per request); off when absent. */
  readonly hot?: HotSettings
}

/**
 * Loader shards when `SERVICE_WORKER_SHARDS` is unset: 1 on a node with 2 CPUs or fewer, 2 on a larger one. Each shard
 * costs about 50 MiB before its first isolate (an isolate is about 2-2.5 MiB wherever it runs), and workerd runs its
 * isolates on one thread: on 2 CPUs the server process and the hot shard already take both, so a second loader shard
 * buys little throughput there. What it does buy is a smaller fault domain (a tenant's busy loop stalls its shard's
 * other projects until `SERVICE_WORKER_TIMEOUT` restarts it), which a larger node keeps.
 */
export const defaultShards = (): number => (Os.availableParallelism() <= 2 ? 1 : 2)

export const defaultRuntimeSettings: RuntimeSettings = {
  enabled: true,
  shards: defaultShards(),
  timeoutMs: 30_000,
  outbound: "public",
  sandbox: "auto"
}

/** The settings from `SERVICE_WORKER*`. */
export const runtimeSettingsConfig = Config.all({
  enabled: Config.String("SERVICE_WORKERS").pipe(
    Config.withDefault("on"),
    Config.map((value) => !["off", "false", "0", "no"].includes(value.trim().toLowerCase()))
  ),
  // Unset is the machine's default, not a number: docs/settings.md says how it is chosen.
  shards: Config.Int("SERVICE_WORKER_SHARDS").pipe(
    Config.option,
    Config.map((shards) => Option.getOrElse(shards, defaultShards))
  ),
  timeoutMs: Config.Duration("SERVICE_WORKER_TIMEOUT").pipe(
    Config.withDefault(Duration.seconds(30)),
    Config.map((duration) => Duration.toMillis(duration))
  ),
  outbound: Config.String("SERVICE_WORKER_OUTBOUND").pipe(
    Config.withDefault("public"),
    Config.map((value): Outbound => (value.trim().toLowerCase() === "none" ? "none" : "public"))
  ),
  sandbox: Config.String("SERVICE_WORKER_SANDBOX").pipe(
    Config.withDefault("auto"),
    Config.map((value): "auto" | "off" => (value.trim().toLowerCase() === "off" ? "off" : "auto"))
  ),
  idleMs: Config.Duration("SERVICE_WORKER_IDLE").pipe(
    Config.withDefault(Duration.minutes(10)),
    Config.map((duration) => Duration.toMillis(duration))
  ),
  hot: Config.all({
    max: Config.Int("SERVICE_WORKER_HOT").pipe(Config.withDefault(8)),
    promoteRate: Config.Int("SERVICE_WORKER_HOT_RATE").pipe(Config.withDefault(50))
  })
})

/** Everything the router needs to load one project's worker: what the loader key stands for. */
export interface WorkerSpec {
  readonly projectId: string
  readonly deploymentId: string
  readonly digest: string
  readonly manifest: Deployments.Manifest
  readonly entry: string
  /** Secret values by name: the worker's `env.<NAME>`. Held in memory only. */
  readonly secrets: Readonly<Record<string, string>>
  /** What the entry module builds into `env` (the granted add-ons); the calls go through the node. */
  readonly bindings: Readonly<Record<string, unknown>>
}

/** A node-side handler for a binding call a worker made; `projectId` is the router's, never the tenant's. */
export type BindingHandler = (
  projectId: string,
  binding: string,
  method: string,
  args: ReadonlyArray<unknown>
) => Promise<{ readonly value: unknown } | { readonly error: { readonly message: string; readonly code?: string } }>

/**
 * A node-side handler for a binding call that streams (a storage put's body in, a get's bytes out): it answers on
 * `response` itself. `projectId` is the router's.
 */
export type RawBindingHandler = (
  projectId: string,
  binding: string,
  method: string,
  query: URLSearchParams,
  request: Http.IncomingMessage,
  response: Http.ServerResponse
) => Promise<void>

/**
 * One of the package's `worker/` sources, which workerd loads as they are: two folders up from this module
 * (`src/runtime/`, `dist/runtime/`), or one up from a bundle that inlined it (the CLI's `dist/hostplane.cjs`, which
 * ships a copy of `worker/` beside `dist/`).
 */
const workerSource = (name: string) => {
  const candidates = [`../../worker/${name}`, `../worker/${name}`].map((path) =>
    fileURLToPath(new URL(path, import.meta.url))
  )
  return Fs.readFileSync(candidates.find((path) => Fs.existsSync(path)) ?? candidates[0]!, "utf8")
}
const routerSource = () => workerSource("router.js")
const entrySource = () => workerSource("entry.js")

/** The hostplane entry module's name in a loaded worker; the tenant's modules keep their paths under `worker/`. */
const entryModule = "__hostplane_entry.js"

const capnpString = (text: string) => JSON.stringify(text)

const shardConfig = (options: { readonly socket: string; readonly nodeSocket: string; readonly outbound: Outbound }) =>
  `using Workerd = import ${capnpString("/workerd/workerd.capnp")};
const config :Workerd.Config = (
  services = [
    (name = "router", worker = .router),
    (name = "node", external = (address = ${capnpString(`unix:${options.nodeSocket}`)}, http = ())),
    ${internetService},
  ],
  sockets = [ (name = "http", address = ${capnpString(`unix:${options.socket}`)}, http = (), service = "router") ],
);
const router :Workerd.Worker = (
  modules = [ (name = "router.js", esModule = embed "router.js") ],
  compatibilityDate = "2026-11-01",
  compatibilityFlags = ["experimental"],
  bindings = [
    (name = "LOADER", workerLoader = ()),
    (name = "NODE", service = "node"),
    (name = "INTERNET", service = "internet"),
  ],
  globalOutbound = "internet",
);
`

const hasCommand = (command: string): boolean => {
  try {
    return spawnSync(command, ["--version"], { stdio: "ignore" }).status === 0
  } catch {
    return false
  }
}

/** The unprivileged account workerd runs as when the node runs as root. */
const nobody = { uid: 65534, gid: 65534 }

/**
 * The sandbox around one workerd: a new mount namespace holding only the system's libraries, the binary and the
 * shard's own folder (never the data directory), new PID, IPC and UTS namespaces, dying with the node.
 */
const bwrapArgs = (binary: string, dir: string): ReadonlyArray<string> => {
  const ro = (path: string) => (Fs.existsSync(path) ? ["--ro-bind", path, path] : [])
  const link = (target: string, path: string) =>
    Fs.existsSync(path) && Fs.lstatSync(path).isSymbolicLink() ? ["--symlink", target, path] : ro(path)
  return [
    ...ro("/usr"),
    ...link("usr/lib", "/lib"),
    ...link("usr/lib64", "/lib64"),
    ...link("usr/bin", "/bin"),
    ...ro("/etc/resolv.conf"),
    ...ro("/etc/hosts"),
    ...ro("/etc/ssl"),
    ...ro("/etc/ca-certificates"),
    // The private /tmp, /proc and /dev before the binary's folder and the shard's: either may be under one of them (a
    // checkout or data directory in /tmp, a data directory on /dev/shm), and a mount made before would be hidden.
    "--tmpfs",
    "/tmp",
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    ...ro(Path.dirname(binary)),
    "--bind",
    dir,
    dir,
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--die-with-parent",
    "--new-session",
    "--chdir",
    dir
  ]
}

interface Shard {
  readonly index: number
  /** Where the current process listens; each generation has its own socket and config. */
  socket: string
  config: string
  generation: number
  /** A replacement process is starting. */
  rotating: boolean
  /** The keys this generation has loaded (asked the node for their code). */
  readonly loaded: Set<string>
  process: ChildProcess | undefined
  /** Resolves once the router answers its health probe. */
  ready: Promise<void>
  markReady: () => void
  /** Answered its health probe since its last start: a request need not wait on `ready`. */
  up: boolean
  /**
   * When the first probe it left unanswered was sent (`undefined` while it answers): silence counts from there, since
   * its last answer may be a probe interval older.
   */
  silentSince: number | undefined
  restarts: number
  rotations: number
}

/**
 * How often a running shard is probed: a hung one is restarted after `timeoutMs` of silence, within this much more.
 * Every probe is a request the node makes and the router answers (at four a second they were most of an idle node's
 * CPU beside its database).
 */
const healthEveryMs = 1_000

const probe = (socket: string, timeoutMs: number) =>
  probeSocket(socket, { path: "/__hostplane/health", status: 200 }, timeoutMs)

/**
 * The worker runtime of a node: `shards` workerd processes, each running the router worker on a unix socket in a
 * private folder, and the node's own socket the routers call back into (code, assets, bindings, tail events).
 * Supervised: a process that dies, or stops answering its health probe for `timeoutMs`, is started again. The
 * processes start once the node has worker code to run (`launch`), not with the node: a node that holds no
 * deployment, a control plane's own node with no project deployed, runs no workerd and probes none.
 */
export class WorkerRuntime extends Context.Service<
  WorkerRuntime,
  {
    readonly settings: RuntimeSettings
    /** Whether workerd runs inside bubblewrap, and as which user. */
    readonly sandbox: { readonly bwrap: boolean; readonly uid: number | undefined }
    /**
     * Starts the shards' processes unless they run already: the invoker calls it once the node's desired state holds
     * a deployment, and registering a key or waiting for a shard's readiness starts them too.
     */
    readonly launch: () => void
    /** Records what a key loads and answers the key; the same spec gives the same key. */
    readonly register: (spec: WorkerSpec) => string
    /** Whether the key is still recorded (the oldest of 10,000 are forgotten): a caller may keep a key it made. */
    readonly registered: (key: string) => boolean
    readonly shardOf: (projectId: string) => number
    /** Resolves when the shard answers (after a restart, too); rejects after `waitMs`. */
    readonly ready: (shard: number, waitMs: number) => Promise<void>
    /** Whether the shard answers now (then `ready` would resolve at once). */
    readonly isUp: (shard: number) => boolean
    readonly socketOf: (shard: number) => string
    /**
     * The hot shard's socket for this key of the project, or `undefined` when the loader shard serves it (not hot, or
     * the hot process runs another key). Called once per request: it counts the request toward promotion.
     */
    readonly hotSocketOf: (projectId: string, key: string) => string | undefined
    /** Every socket a request may be sent to now: the loader shards' and the hot process's. */
    readonly sockets: () => ReadonlyArray<string>
    /** The hot process: its pid, the projects it serves, how many were built. */
    readonly hot: () => {
      readonly pid: number | undefined
      readonly projects: ReadonlyArray<string>
      readonly builds: number
    }
    /** Counts a request on a shard's socket until `done` is called: a replaced process is stopped once it has none. */
    readonly track: (socket: string) => () => void
    /** Shard generations started to shed stale isolates, by shard. */
    readonly rotations: () => ReadonlyArray<number>
    readonly pids: () => ReadonlyArray<number | undefined>
    readonly restarts: () => ReadonlyArray<number>
    readonly setBindings: (handler: BindingHandler) => void
    readonly setRawBindings: (handler: RawBindingHandler) => void
    /** Every invocation's event: the edge's end of it joined with what its worker's entry module reported. */
    readonly collector: LogCollector
  }
>()("@hostplane/node/runtime/WorkerRuntime") {
  /** The runtime on given settings, over the node's ArtifactStore. */
  static readonly layer = (settings: RuntimeSettings) =>
    Layer.effect(
      WorkerRuntime,
      Effect.gen(function* () {
        const artifacts = yield* Deployments.ArtifactStore
        return yield* Effect.acquireRelease(
          Effect.promise(() => start(settings, artifacts)),
          (runtime) => Effect.promise(() => runtime.stop())
        ).pipe(Effect.map((running) => running.service))
      })
    )

  static readonly layerConfig = Layer.unwrap(Effect.map(runtimeSettingsConfig, WorkerRuntime.layer))
}

const readAll = <E>(stream: Stream.Stream<Uint8Array, E>) =>
  Effect.runPromise(
    Stream.runFold(
      stream,
      () => [] as Array<Uint8Array>,
      (chunks, chunk) => {
        chunks.push(chunk)
        return chunks
      }
    )
  ).then((chunks) => Buffer.concat(chunks))

const readJson = (request: Http.IncomingMessage, limit: number) =>
  new Promise<unknown>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    let size = 0
    request.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > limit) {
        request.destroy()
        reject(new Error("body too large"))
      } else chunks.push(chunk)
    })
    request.on("end", () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}"))
      } catch (error) {
        reject(error)
      }
    })
    request.on("error", reject)
  })

/** The tenant's `worker/` files as loader modules, named by their path under `worker/`. */
const modulesOf = async (artifacts: Deployments.ArtifactStore["Service"], digest: string) => {
  const index = await Effect.runPromise(artifacts.index(digest))
  const modules: Record<string, Record<string, string>> = {}
  if (Option.isNone(index)) return modules
  for (const file of index.value.files) {
    if (!file.path.startsWith("worker/")) continue
    const name = file.path.slice("worker/".length)
    const extension = Path.extname(name).toLowerCase()
    const stored = await Effect.runPromise(artifacts.file(digest, file.path))
    if (Option.isNone(stored)) continue
    const bytes = await readAll(stored.value.content)
    if (extension === ".js" || extension === ".mjs") modules[name] = { js: bytes.toString("utf8") }
    else if (extension === ".json") modules[name] = { json: JSON.parse(bytes.toString("utf8")) }
    else if (extension === ".wasm") modules[name] = { wasm: bytes.toString("base64") }
    else if (extension === ".txt" || extension === ".html") modules[name] = { text: bytes.toString("utf8") }
  }
  return modules
}

const start = async (settings: RuntimeSettings, artifacts: Deployments.ArtifactStore["Service"]) => {
  const binary = settings.binary ?? workerdBinary()
  const root = process.getuid?.() === 0
  // Which sandbox is installed is asked (a process each) only when the first workerd starts.
  let sandboxTools: { readonly bwrap: boolean; readonly setpriv: boolean } | undefined
  const sandboxes = () => {
    if (sandboxTools === undefined) {
      const bwrap = settings.sandbox === "auto" && hasCommand("bwrap")
      sandboxTools = { bwrap, setpriv: !bwrap && hasCommand("setpriv") }
    }
    return sandboxTools
  }
  // A private folder outside the data directory: the router's sources, configs and the sockets.
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "hostplane-runtime-"))
  Fs.chmodSync(dir, 0o700)
  const nodeSocket = Path.join(dir, "node.sock")
  Fs.writeFileSync(Path.join(dir, "router.js"), routerSource())
  const entry = entrySource()
  const bindingSources = bindingModules(workerSource)
  const specs = new Map<string, WorkerSpec>()
  let bindings: BindingHandler = async () => ({ error: { message: "bindings_unavailable" } })
  let rawBindings: RawBindingHandler = async (_project, _binding, _method, _query, request, response) => {
    request.resume()
    response.writeHead(200, { "content-type": "application/json" })
    response.end(JSON.stringify({ error: { message: "bindings_unavailable" } }))
  }
  const collector = Effect.runSync(makeCollector)

  /** A worker's modules as both shapes load them: the tenant's `worker/` files, the binding modules, the entry module. */
  const workerModules = async (spec: WorkerSpec) => {
    const modules: Record<string, Record<string, unknown>> = {}
    modules[entryModule] = { js: entry.replace("__TENANT_ENTRY__", `./${spec.entry.slice("worker/".length)}`) }
    Object.assign(modules, await modulesOf(artifacts, spec.digest), bindingSources)
    return modules
  }

  const control = Http.createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://node")
    const fail = (status: number, message: string) => {
      if (!response.headersSent) response.writeHead(status, { "content-type": "text/plain" })
      response.end(message)
    }
    const handle = async () => {
      if (url.pathname === "/code") {
        const key = url.searchParams.get("key") ?? ""
        const spec = specs.get(key)
        if (spec === undefined) return fail(404, "unknown key")
        noteLoaded(key, spec)
        const modules = await workerModules(spec)
        const body = JSON.stringify({
          projectId: spec.projectId,
          deploymentId: spec.deploymentId,
          digest: spec.digest,
          compatibilityDate: spec.manifest.compatibilityDate ?? Deployments.defaultCompatibilityDate,
          compatibilityFlags: spec.manifest.compatibilityFlags ?? [],
          mainModule: entryModule,
          modules,
          secrets: spec.secrets,
          bindings: spec.bindings,
          outbound: settings.outbound
        })
        response.writeHead(200, { "content-type": "application/json" })
        return response.end(body)
      }
      if (url.pathname === "/asset") {
        const digest = url.searchParams.get("digest") ?? ""
        const candidates = Edge.assetCandidates(url.searchParams.get("path") ?? "/") ?? []
        for (const candidate of candidates) {
          const file = await Effect.runPromise(artifacts.file(digest, candidate))
          if (Option.isSome(file)) {
            response.writeHead(200, {
              "content-type": Edge.contentTypeOf(candidate),
              "content-length": String(file.value.bytes)
            })
            if (request.method === "HEAD") return response.end()
            return Readable.fromWeb(Stream.toReadableStream(file.value.content) as never).pipe(response)
          }
        }
        return fail(404, "not found")
      }
      const projectId = request.headers["x-hostplane-project"]
      if (typeof projectId !== "string") return fail(400, "no project")
      if (url.pathname === "/logs") {
        // The entry modules' reports (console lines, exceptions by invocation id), from the project the router loaded
        // the worker for.
        const reports = await readJson(request, 64 * 1024 * 1024)
        collector.fromEntry(projectId, Array.isArray(reports) ? reports : [])
        response.writeHead(204)
        return response.end()
      }
      const raw = /^\/raw\/([a-z]+)\/([a-zA-Z]+)$/.exec(url.pathname)
      if (raw !== null) return rawBindings(projectId, raw[1]!, raw[2]!, url.searchParams, request, response)
      const call = /^\/binding\/([a-z]+)\/([a-zA-Z]+)$/.exec(url.pathname)
      if (call !== null) {
        const body = (await readJson(request, 150 * 1024 * 1024)) as { args?: Array<unknown> }
        const answer = await bindings(projectId, call[1]!, call[2]!, body.args ?? [])
        response.writeHead(200, { "content-type": "application/json" })
        return response.end(JSON.stringify(answer))
      }
      return fail(404, "no such route")
    }
    handle().catch((error: unknown) => fail(500, String(error)))
  })
  await new Promise<void>((resolve) => control.listen(nodeSocket, resolve))
  // workerd may run as another user: it must be able to connect to the node's socket.
  Fs.chmodSync(nodeSocket, 0o666)
  if (root) Fs.chownSync(dir, nobody.uid, nobody.gid)

  const shards: Array<Shard> = []
  let stopping = false
  const hotSettings = settings.hot ?? { max: 0, promoteRate: 1 }
  const hot = makeHot({
    settings: hotSettings,
    timeoutMs: settings.timeoutMs,
    outbound: settings.outbound,
    dir,
    nodeSocket,
    routerSource: routerSource(),
    spawn: (label, config, env) => spawnWorkerd(label, config, env),
    own: (path) => {
      if (root) Fs.chownSync(path, nobody.uid, nobody.gid)
    },
    workerOf: async (key): Promise<HotWorker | undefined> => {
      const spec = specs.get(key)
      if (spec === undefined) return undefined
      const modules = await workerModules(spec)
      return {
        projectId: spec.projectId,
        key,
        deploymentId: spec.deploymentId,
        digest: spec.digest,
        compatibilityDate: spec.manifest.compatibilityDate ?? Deployments.defaultCompatibilityDate,
        compatibilityFlags: spec.manifest.compatibilityFlags ?? [],
        modules: Object.entries(modules),
        secrets: spec.secrets,
        bindings: spec.bindings
      }
    },
    inflight: (socket) => inflight.get(socket) ?? 0,
    forget: (socket) => inflight.delete(socket)
  })

  /** Generation `generation` of shard `index`: its socket and its config (which names the socket). */
  const prepare = (index: number, generation: number) => {
    const socket = Path.join(dir, `shard-${index}-${generation}.sock`)
    const config = `shard-${index}-${generation}.capnp`
    Fs.writeFileSync(Path.join(dir, config), shardConfig({ socket, nodeSocket, outbound: settings.outbound }))
    if (root) Fs.chownSync(Path.join(dir, config), nobody.uid, nobody.gid)
    Fs.rmSync(socket, { force: true })
    return { socket, config }
  }

  /** workerd on a config, sandboxed (bubblewrap, or as `nobody` when root), dying with the node. */
  const spawnWorkerd = (label: string, config: string, env?: Readonly<Record<string, string>>) => {
    const command = [binary, "serve", "--experimental", config]
    const { bwrap, setpriv } = sandboxes()
    // Without bubblewrap's --die-with-parent, setpriv ties workerd's life to the node's all the same.
    const [file, ...args] = bwrap
      ? ["bwrap", ...bwrapArgs(binary, dir), ...command]
      : setpriv
        ? ["setpriv", "--pdeathsig", "KILL", ...command]
        : command
    const child = spawn(file!, args, {
      cwd: dir,
      stdio: ["ignore", "ignore", "pipe"],
      ...(env === undefined ? {} : { env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env } }),
      ...(root ? nobody : {})
    })
    child.stderr?.on("data", (chunk: Buffer) => {
      // workerd's own diagnostics (tenants' console output goes to the tail, not here).
      const text = chunk.toString("utf8").trim()
      // A rejected egress or a tenant's fault is logged by workerd as an internal error, and on the hot shard (no
      // router catching it) a hung handler as an uncaught exception: they belong to the tenant's events, not the
      // node's log.
      if (
        text === "" ||
        /became the default|jsgInternalError|^stack:|internal error; reference|: Uncaught exception: /.test(text)
      )
        return
      process.stderr.write(`workerd[${label}] ${text}\n`)
    })
    return child
  }

  const spawnShard = (shard: Shard, config: string) => {
    const child = spawnWorkerd(String(shard.index), config)
    child.on("exit", () => {
      if (shard.process !== child) return
      shard.process = undefined
      if (!stopping) setTimeout(() => relaunch(shard), 100)
    })
    return child
  }

  const launch = (shard: Shard) => {
    let markReady = () => {}
    shard.up = false
    shard.ready = new Promise<void>((resolve) => (markReady = resolve))
    shard.markReady = () => {
      shard.up = true
      markReady()
    }
    Fs.rmSync(shard.socket, { force: true })
    shard.loaded.clear()
    const child = spawnShard(shard, shard.config)
    shard.process = child
    shard.silentSince = undefined
    // Ready as soon as it answers (workerd starts in well under a second), not at the next health probe.
    void (async () => {
      const deadline = Date.now() + 60_000
      while (Date.now() < deadline && !stopping && shard.process === child && !shard.up) {
        if (await probe(shard.socket, 1_000)) {
          if (shard.process !== child) return
          shard.silentSince = undefined
          shard.markReady()
          return
        }
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    })()
  }

  /** Replaced processes still finishing their requests. */
  const draining = new Set<ChildProcess>()

  // Requests in flight by socket: a replaced process keeps serving those it has, and no new one.
  const inflight = new Map<string, number>()
  const track = (socket: string) => {
    inflight.set(socket, (inflight.get(socket) ?? 0) + 1)
    let done = false
    return () => {
      if (done) return
      done = true
      const left = (inflight.get(socket) ?? 1) - 1
      if (left <= 0) inflight.delete(socket)
      else inflight.set(socket, left)
    }
  }

  /** The longest a replaced process keeps a request that never ends (a stream) before it is stopped all the same. */
  const drainLimitMs = 10 * 60_000

  /**
   * Starts the shard's next generation, and once it answers, sends every new request there; the old process is
   * stopped when it has had no request in flight for a second (its last tail events sent), or after `drainLimitMs`.
   */
  const rotate = async (shard: Shard) => {
    if (shard.rotating || stopping || shard.process === undefined) return
    shard.rotating = true
    try {
      const generation = shard.generation + 1
      const next = prepare(shard.index, generation)
      const child = spawnShard(shard, next.config)
      const deadline = Date.now() + 60_000
      let answered = false
      while (!answered && !stopping && child.exitCode === null && Date.now() < deadline) {
        answered = await probe(next.socket, 1_000)
        if (!answered) await new Promise((resolve) => setTimeout(resolve, 50))
      }
      if (!answered || stopping || shard.process === undefined) {
        child.kill("SIGKILL")
        Fs.rmSync(Path.join(dir, next.config), { force: true })
        return
      }
      const old = { process: shard.process, socket: shard.socket, config: shard.config }
      shard.process = child
      shard.socket = next.socket
      shard.config = next.config
      shard.generation = generation
      shard.silentSince = undefined
      shard.loaded.clear()
      shard.rotations += 1
      draining.add(old.process)
      const started = Date.now()
      let idleSince: number | undefined
      const drain = setInterval(() => {
        const busy = (inflight.get(old.socket) ?? 0) > 0
        idleSince = busy ? undefined : (idleSince ?? Date.now())
        const idle = idleSince !== undefined && Date.now() - idleSince >= 1_000
        if (!stopping && !idle && Date.now() - started < drainLimitMs) return
        clearInterval(drain)
        draining.delete(old.process)
        old.process.kill("SIGKILL")
        inflight.delete(old.socket)
        Fs.rmSync(old.socket, { force: true })
        Fs.rmSync(Path.join(dir, old.config), { force: true })
      }, 100)
      drain.unref()
    } finally {
      shard.rotating = false
    }
  }

  // The key each project's requests use now: any other key a shard loaded for it is stale.
  const latest = new Map<string, string>()
  const rotateAfterStale = Math.max(1, settings.rotateAfterStale ?? 16)
  const idleMs = settings.idleMs ?? 10 * 60_000
  // When each key was last asked for (a coarse clock, moved by the health timer: no clock read per request).
  let clock = Date.now()
  const lastUsed = new Map<string, number>()
  /**
   * Replaces the shard when enough of its isolates serve nothing: stale ones (a replaced deployment, an env changed
   * since) and idle ones. The fresh process reloads only the isolates asked for again, each once (about 30 ms), so a
   * shard whose wasted isolates outnumber those in use is replaced sooner.
   */
  const consider = (shard: Shard) => {
    let wasted = 0
    for (const loaded of shard.loaded) {
      const owner = specs.get(loaded)?.projectId
      if (owner === undefined || latest.get(owner) !== loaded || clock - (lastUsed.get(loaded) ?? 0) >= idleMs) {
        wasted += 1
      }
    }
    const inUse = shard.loaded.size - wasted
    if (wasted >= rotateAfterStale || (wasted >= Math.ceil(rotateAfterStale / 4) && wasted >= inUse)) void rotate(shard)
  }
  const noteLoaded = (key: string, spec: WorkerSpec) => {
    // Load checks use a worker of their own that the router does not keep.
    if (spec.projectId.startsWith("__")) return
    const shard = shards[shardOf(spec.projectId)]
    if (shard === undefined) return
    shard.loaded.add(key)
    lastUsed.set(key, clock)
    consider(shard)
  }
  /** Counts a request of the key: an isolate asked for within `idleMs` is in use. */
  const touch = (key: string) => {
    lastUsed.set(key, clock)
  }
  // Isolates become idle with no event to notice it: look now and then, and forget the keys no shard holds.
  const idleTimer = setInterval(
    () => {
      for (const key of lastUsed.keys()) {
        if (clock - lastUsed.get(key)! >= idleMs && !shards.some((shard) => shard.loaded.has(key))) lastUsed.delete(key)
      }
      for (const shard of shards) consider(shard)
    },
    Math.max(250, Math.min(30_000, idleMs / 4))
  )
  idleTimer.unref()

  const relaunch = (shard: Shard) => {
    if (stopping) return
    shard.restarts += 1
    const old = shard.process
    shard.process = undefined
    if (old !== undefined && old.exitCode === null) {
      // Its exit must not launch a second process: this shard's process is no longer `old`.
      old.kill("SIGKILL")
    }
    launch(shard)
  }

  for (let index = 0; index < Math.max(1, settings.shards); index++) {
    const { socket, config } = prepare(index, 0)
    const shard: Shard = {
      index,
      socket,
      config,
      generation: 0,
      rotating: false,
      loaded: new Set(),
      rotations: 0,
      process: undefined,
      ready: Promise.resolve(),
      markReady: () => {},
      up: false,
      silentSince: undefined,
      restarts: 0
    }
    shards.push(shard)
  }
  if (root) for (const file of Fs.readdirSync(dir)) Fs.chownSync(Path.join(dir, file), nobody.uid, nobody.gid)

  // Health: a probe a second (each costs the node a request); silence for the timeout restarts the shard. A started
  // process is marked ready by its own faster polls (`launch`).
  let probing = false
  const healthTimer = setInterval(() => {
    clock = Date.now()
    if (probing) return
    probing = true
    void Promise.all(
      shards.map(async (shard) => {
        if (shard.process === undefined) return
        const sent = Date.now()
        const ok = await probe(shard.socket, Math.min(2_000, settings.timeoutMs))
        if (ok) {
          shard.silentSince = undefined
          shard.markReady()
        } else {
          shard.silentSince ??= sent
          if (Date.now() - shard.silentSince > settings.timeoutMs) relaunch(shard)
        }
      })
    ).finally(() => (probing = false))
  }, healthEveryMs)
  healthTimer.unref()

  let launched = false
  const launchAll = () => {
    if (launched || stopping) return
    launched = true
    for (const shard of shards) launch(shard)
  }

  const register = (spec: WorkerSpec) => {
    const version = createHash("sha256")
      .update(
        JSON.stringify([spec.deploymentId, spec.entry, spec.manifest, spec.secrets, spec.bindings, settings.outbound])
      )
      .digest("base64url")
      .slice(0, 22)
    const key = `${spec.projectId}:${spec.digest.slice("sha256:".length, "sha256:".length + 16)}:${version}`
    if (!specs.has(key) && specs.size >= 10_000) specs.delete(specs.keys().next().value!)
    specs.set(key, spec)
    launchAll()
    if (!spec.projectId.startsWith("__")) latest.set(spec.projectId, key)
    return key
  }

  const shardsOf = new Map<string, number>()
  const shardOf = (projectId: string) => {
    let shard = shardsOf.get(projectId)
    if (shard === undefined) {
      shard = createHash("sha256").update(projectId).digest().readUInt32BE(0) % shards.length
      if (shardsOf.size >= 100_000) shardsOf.clear()
      shardsOf.set(projectId, shard)
    }
    return shard
  }

  const ready = (index: number, waitMs: number) =>
    new Promise<void>((resolve, reject) => {
      launchAll()
      const timer = setTimeout(() => reject(new Error("shard not ready")), waitMs)
      void shards[index]!.ready.then(() => {
        clearTimeout(timer)
        resolve()
      })
    })

  const service = WorkerRuntime.of({
    settings,
    get sandbox() {
      return { bwrap: sandboxes().bwrap, uid: root ? nobody.uid : process.getuid?.() }
    },
    launch: launchAll,
    register,
    registered: (key) => specs.has(key),
    shardOf,
    ready,
    isUp: (index) => shards[index]!.up,
    socketOf: (index) => shards[index]!.socket,
    hotSocketOf: (projectId, key) => {
      touch(key)
      return hot.socketOf(projectId, key)
    },
    sockets: () => [...shards.map((shard) => shard.socket), ...hot.sockets()],
    hot: hot.state,
    track,
    rotations: () => shards.map((shard) => shard.rotations),
    pids: () => shards.map((shard) => shard.process?.pid),
    restarts: () => shards.map((shard) => shard.restarts),
    setBindings: (handler) => (bindings = handler),
    setRawBindings: (handler) => (rawBindings = handler),
    collector
  })

  const stop = async () => {
    stopping = true
    clearInterval(healthTimer)
    clearInterval(idleTimer)
    await hot.stop()
    for (const child of draining) child.kill("SIGKILL")
    await Promise.all(
      shards.map(
        (shard) =>
          new Promise<void>((resolve) => {
            const child = shard.process
            if (child === undefined || child.exitCode !== null) return resolve()
            child.once("exit", () => resolve())
            child.kill("SIGKILL")
          })
      )
    )
    control.closeAllConnections()
    await new Promise<void>((resolve) => control.close(() => resolve()))
    Fs.rmSync(dir, { recursive: true, force: true })
  }

  return { service, stop }
}

/** A fresh key's random part, for checks that must never reuse a cached isolate. */
export const freshNonce = () => randomBytes(9).toString("base64url")

/** The entry of a bundle, or `undefined` when it holds no worker. */
export const entryOf = (manifest: Deployments.Manifest, paths: ReadonlyArray<string>) =>
  Result.getOrUndefined(Deployments.workerEntry(manifest, paths))
