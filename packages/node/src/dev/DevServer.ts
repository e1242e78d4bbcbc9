import { type Database, Deployments, type Storage } from "@hostplane/core"
import * as Edge from "../edge/AssetPath.ts"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import * as Http from "node:http"
import type { InvocationEvent } from "../runtime/LogCollector.ts"
import { checkUrl, loadFailureOf } from "../runtime/WorkerCheckLive.ts"
import { WorkerRuntime } from "../runtime/WorkerRuntime.ts"
import { devAuthCookie, devCookieValue, devFlags, devProject, devUserOfCookie, makeDevBindings } from "./DevBindings.ts"
import { DevProblem, readSnapshot, signature, type Snapshot, snapshotStore } from "./Folder.ts"

export interface DevOptions {
  /** The folder to serve: `service.json`, `worker/`, `assets/` and `.dev.vars`. */
  readonly dir: string
  readonly host: string
  readonly port: number
  /** The workerd binary to run. */
  readonly binary: string
  /** One line of the dev server's own output: invocations and reloads, and (`problem`) a version it refused. */
  readonly print: (line: string, problem?: boolean) => void
  /** How often the folder is looked at for changes; a change is loaded once it held still for one more look. */
  readonly pollMs?: number
  /**
   * The database of the project the folder is linked to (`hostplane dev --linked`: its `GET .../database/connect`):
   * `env.db` queries it as the project role, as the deployed worker would. Without it `env.db` rejects every call.
   */
  readonly database?: Database.DatabaseConnect | undefined
  /**
   * Where `env.storage` keeps the folder's objects (`hostplane dev`: a disk store in the folder's `.hostplane/dev/`),
   * through the node's own binding. Without it every call rejects with `not_available_in_dev`.
   */
  readonly objects?: Storage.ObjectStore["Service"] | undefined
  /** The quota `env.storage` enforces (the linked project's; the free plan's by default). */
  readonly storageQuotaBytes?: number | undefined
  /** The folder `env.email` writes each message to as an `.eml` file. Without it every call rejects. */
  readonly outbox?: string | undefined
  /** The only `From` a message may carry (the linked project's address; `dev@localhost` by default). */
  readonly mailFrom?: string | undefined
}

export interface DevServer {
  /** `http://host:port`, the port the server actually listens on. */
  readonly url: string
  readonly stop: () => Promise<void>
}

/** Headers a client may not send to a worker: the router's own channel and connection-level ones. */
const hopHeaders = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection"])

const envelope = (response: Http.ServerResponse, status: number, code: string, message: string) => {
  if (response.headersSent) return response.destroy()
  response.writeHead(status, { "content-type": "application/json" })
  response.end(JSON.stringify({ code, message }))
}

const cookiePairs = (header: string | undefined) =>
  (header ?? "")
    .split(";")
    .map((pair) => pair.trim())
    .filter((pair) => pair !== "")

/** A cookie's value in a `Cookie` header. */
const cookieOf = (header: string | undefined, name: string): string | undefined => {
  for (const pair of cookiePairs(header)) {
    if (pair.startsWith(`${name}=`)) return pair.slice(name.length + 1)
  }
  return undefined
}

/** The `Cookie` header without one cookie; undefined when nothing is left. */
const withoutCookie = (header: string | undefined, name: string): string | undefined => {
  const kept = cookiePairs(header).filter((pair) => !pair.startsWith(`${name}=`))
  return kept.length === 0 ? undefined : kept.join("; ")
}

const argument = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value))

/** An invocation as `hostplane logs` prints it: the request on one line, console lines and exceptions beneath. */
export const invocationLines = (event: InvocationEvent): ReadonlyArray<string> => {
  const path = (() => {
    try {
      const url = new URL(event.request.url)
      return `${url.pathname}${url.search}`
    } catch {
      return event.request.url
    }
  })()
  return [
    [
      event.request.method,
      path,
      event.response === null ? "-" : String(event.response.status),
      event.outcome,
      `${event.durationMs}ms`
    ].join("  "),
    ...event.logs.map((line) => `  ${line.level.padEnd(5)} ${line.message.map(argument).join(" ")}`),
    ...event.exceptions.flatMap((exception) => {
      const stack = exception.stack
        .split("\n")
        .slice(1)
        .map((line) => `    ${line.trim()}`)
        .filter((line) => line.trim() !== "")
      return [`  ${exception.name}: ${exception.message}`, ...stack]
    })
  ]
}

const listen = (server: Http.Server, host: string, port: number) =>
  new Promise<void>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) =>
      reject(
        new DevProblem(
          error.code === "EADDRINUSE"
            ? `${host}:${port} is already in use; pick another with --port`
            : `cannot listen on ${host}:${port}: ${error.message}`
        )
      )
    )
    server.listen(port, host, () => resolve())
  })

interface Version {
  readonly snapshot: Snapshot
  /** The runtime's key for the snapshot's worker, `undefined` for an assets-only folder. */
  readonly key: string | undefined
}

/**
 * `hostplane dev`: the folder served on `host:port` by the node's own runtime (one workerd shard running the router,
 * the tenant loaded through `workerLoader`) with the edge's route rules, reloaded when the folder changes. A version
 * is served only once it has been read whole and its worker has loaded; until then the previous one keeps answering.
 */
export const startDevServer = async (options: DevOptions): Promise<DevServer> => {
  // The port first: one taken is said before workerd starts and the folder is read.
  if (options.port !== 0) {
    const probe = Http.createServer()
    await listen(probe, options.host, options.port)
    await new Promise((resolve) => probe.close(resolve))
  }
  const snapshots = new Map<string, Snapshot>()
  const scope = Effect.runSync(Scope.make())
  const runtimeLayer = WorkerRuntime.layer({
    enabled: true,
    shards: 1,
    timeoutMs: 30_000,
    outbound: "public",
    sandbox: "auto",
    binary: options.binary
  }).pipe(Layer.provide(Layer.succeed(Deployments.ArtifactStore, snapshotStore(snapshots))))
  const context = await Effect.runPromise(Layer.buildWithScope(runtimeLayer, scope))
  const runtime = Context.get(context, WorkerRuntime)
  const database = options.database
  // The linked database's pool and the storage binding's state live as long as the server.
  const local = {
    objects: options.objects,
    storageQuotaBytes: options.storageQuotaBytes,
    outbox: options.outbox,
    mailFrom: options.mailFrom,
    database,
    print: (line: string) => options.print(line)
  }
  const addons = makeDevBindings(local)
  runtime.setBindings(addons.handler)
  runtime.setRawBindings(addons.rawHandler)
  runtime.collector.setSink((events) => {
    for (const event of events) {
      // The load check of a new version is the dev server's own request, not the developer's.
      if (event.request.url === checkUrl) continue
      for (const line of invocationLines(event)) options.print(line)
    }
  })

  let generation = 0
  const register = (snapshot: Snapshot) =>
    snapshot.entry === undefined
      ? undefined
      : runtime.register({
          projectId: devProject,
          deploymentId: `dev-${++generation}`,
          digest: snapshot.digest,
          manifest: snapshot.manifest,
          entry: snapshot.entry,
          secrets: snapshot.secrets,
          bindings: devFlags(snapshot.manifest, local)
        })

  /** The runtime's message when the key's worker does not load, `undefined` when it does. */
  const loadFailure = (key: string) =>
    loadFailureOf(runtime.socketOf(0), key).catch((error: Error) => `the runtime did not answer: ${error.message}`)

  let current: Version | undefined
  /** Why nothing is served yet (the first version did not load); cleared by the first good one. */
  let startFailure: string | undefined = "the folder is being read"

  /** Reads, loads and checks one version; it replaces the served one only when its worker loads. */
  const load = async (sig: string): Promise<"loaded" | "refused" | "changed"> => {
    let snapshot: Snapshot
    try {
      snapshot = readSnapshot(options.dir)
    } catch (error) {
      if (signature(options.dir) !== sig) return "changed"
      const message = error instanceof DevProblem ? error.message : String(error)
      report(message)
      return "refused"
    }
    // Written to while it was read: not a version anyone saved; wait until it holds still.
    if (signature(options.dir) !== sig) return "changed"
    snapshots.set(snapshot.digest, snapshot)
    const key = register(snapshot)
    if (key !== undefined) {
      await runtime.ready(0, 60_000)
      const failure = await loadFailure(key)
      if (failure !== undefined) {
        report(`${snapshot.entry} does not load: ${failure}`)
        return "refused"
      }
    }
    const previous = current
    current = { snapshot, key }
    startFailure = undefined
    if (previous !== undefined && previous.snapshot.digest !== snapshot.digest) {
      // Loaded isolates are the runtime's to evict; the folder's bytes are ours.
      setTimeout(() => snapshots.delete(previous.snapshot.digest), 60_000).unref()
    }
    return "loaded"
  }

  const report = (message: string) => {
    if (current === undefined) startFailure = message
    options.print(`✗ ${message}`, true)
    options.print(
      current === undefined
        ? "  nothing to serve yet: waiting for a change to the folder"
        : "  still serving the last version that loaded; fix the folder and save again",
      true
    )
  }

  let lastSeen = signature(options.dir)
  let lastLoaded = lastSeen
  try {
    while ((await load(lastSeen)) === "changed") {
      await new Promise((resolve) => setTimeout(resolve, 100))
      lastSeen = signature(options.dir)
      lastLoaded = lastSeen
    }
  } catch (error) {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    throw error
  }

  // Polling rather than fs.watch: it sees every editor's way of saving (rename over, truncate and write) on every
  // platform, and two equal looks in a row are the debounce that keeps a half-written save from being loaded.
  let loading = false
  const pollMs = options.pollMs ?? 250
  const poll = setInterval(() => {
    if (loading) return
    const sig = signature(options.dir)
    if (sig !== lastSeen) {
      lastSeen = sig
      return
    }
    if (sig === lastLoaded) return
    loading = true
    void load(sig)
      .then((result) => {
        if (result === "changed") return
        lastLoaded = sig
        if (result === "loaded") options.print(`⟳ reloaded ${current?.snapshot.entry ?? "assets"}`)
      })
      .catch((error: unknown) => options.print(`✗ ${String(error)}`, true))
      .finally(() => (loading = false))
  }, pollMs)

  const serveAsset = (response: Http.ServerResponse, method: string, status: number, path: string, body: Buffer) => {
    response.writeHead(status, {
      "content-type": Edge.contentTypeOf(path),
      "content-length": String(body.length),
      "cache-control": "no-store"
    })
    response.end(method === "HEAD" ? undefined : body)
  }

  const server = Http.createServer((request, response) => {
    const version = current
    if (version === undefined) {
      request.resume()
      return envelope(response, 503, "worker_invalid", startFailure ?? "nothing loaded yet")
    }
    const method = request.method ?? "GET"
    const url = new URL(request.url ?? "/", "http://dev.invalid")
    const { snapshot, key } = version
    if (snapshot.manifest.auth === true && url.pathname.startsWith("/__service/auth/")) {
      request.resume()
      return signIn(request, response, url)
    }
    const toWorker =
      key !== undefined && (snapshot.manifest.workerFirst === true || (method !== "GET" && method !== "HEAD"))
    if (!toWorker) {
      const candidates = Edge.assetCandidates(url.pathname)
      for (const candidate of candidates ?? []) {
        const file = snapshot.files.get(candidate)
        if (file !== undefined) {
          request.resume()
          return serveAsset(response, method, 200, candidate, file)
        }
      }
      if (key === undefined) {
        request.resume()
        const notFound = snapshot.files.get("assets/404.html")
        if (notFound !== undefined) return serveAsset(response, method, 404, "404.html", notFound)
        return candidates === undefined
          ? envelope(response, 400, "bad_request", "this path cannot name a file")
          : envelope(response, 404, "not_found", `no file for ${url.pathname}`)
      }
    }
    forward(request, response, key!)
  })

  /**
   * The sign-in routes of a folder that declares `auth`: no provider is reached under dev, so a login signs in at once
   * as a dev user (`?email=`, else `dev@localhost`) with the provider named, through a cookie of the dev server's own.
   */
  const signIn = (request: Http.IncomingMessage, response: Http.ServerResponse, url: URL) => {
    const [action = "", provider = ""] = url.pathname.slice("/__service/auth/".length).split("/")
    const next = url.searchParams.get("next")
    const target = next !== null && next.startsWith("/") && !next.startsWith("//") ? next : "/"
    const user = devUserOfCookie(cookieOf(request.headers.cookie, devAuthCookie))
    if (action === "login" && /^[a-z0-9_-]{1,40}$/.test(provider)) {
      const email = url.searchParams.get("email") ?? "dev@localhost"
      if (!/^[^\s<>@,;:"()[\]\\]+@[^\s<>@,;:"()[\]\\]+$/.test(email)) {
        return envelope(response, 400, "bad_request", "email is an address like dev@example.com")
      }
      response.writeHead(303, {
        location: target,
        "set-cookie": `${devAuthCookie}=${devCookieValue(email, provider)}; Path=/; HttpOnly; SameSite=Lax`,
        "cache-control": "no-store"
      })
      return response.end()
    }
    if (action === "logout") {
      response.writeHead(303, {
        location: target,
        "set-cookie": `${devAuthCookie}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0`,
        "cache-control": "no-store"
      })
      return response.end()
    }
    if (action === "me" && request.method === "GET") {
      if (user === undefined) return envelope(response, 401, "unauthorized", "no dev user is signed in")
      response.writeHead(200, { "content-type": "application/json", "cache-control": "no-store" })
      return response.end(
        JSON.stringify({
          id: user.id,
          provider: user.provider,
          subject: user.email,
          email: user.email,
          name: user.name
        })
      )
    }
    return envelope(response, 404, "not_found", `no sign-in route ${url.pathname} under hostplane dev`)
  }

  const forward = (incoming: Http.IncomingMessage, response: Http.ServerResponse, key: string) => {
    const headers: Record<string, string | Array<string>> = {}
    for (const [name, value] of Object.entries(incoming.headers)) {
      if (value === undefined || hopHeaders.has(name) || name.startsWith("x-hostplane-")) continue
      headers[name] = value
    }
    headers["x-forwarded-for"] = incoming.socket.remoteAddress ?? ""
    headers["x-forwarded-proto"] = "http"
    const url = `http://${incoming.headers.host ?? `${options.host}:${options.port}`}${incoming.url ?? "/"}`
    // As the edge does with the session cookie: the worker never sees it, env.auth.user(request) resolves it.
    const session = cookieOf(incoming.headers.cookie, devAuthCookie)
    const rest = withoutCookie(incoming.headers.cookie, devAuthCookie)
    if (rest === undefined) delete headers["cookie"]
    else headers["cookie"] = rest
    const user = devUserOfCookie(session) === undefined ? undefined : session
    const invocation = runtime.collector.begin({
      projectId: devProject,
      deploymentId: `dev-${generation}`,
      method: incoming.method ?? "GET",
      url
    })
    headers["x-hostplane-invoke"] = JSON.stringify({
      key,
      url,
      id: invocation.id,
      ...(user === undefined ? {} : { user })
    })
    const upstream = Http.request({
      socketPath: runtime.socketOf(0),
      method: incoming.method,
      path: incoming.url,
      headers
    })
    upstream.on("response", (answer) => {
      if (answer.headers["x-hostplane-outcome"] === "exception") {
        answer.resume()
        invocation.end({ outcome: "exception", status: null })
        return envelope(response, 500, "worker_exception", "the worker threw an exception")
      }
      // workerd canceled a handler that waits on nothing: it would never answer, as the node's edge says too.
      if (answer.headers["x-hostplane-outcome"] === "hung") {
        answer.resume()
        invocation.end({ outcome: "timeout", status: null })
        return envelope(response, 504, "worker_timeout", "the worker waits on nothing and can never answer")
      }
      const status = answer.statusCode ?? 502
      answer.once("end", () => invocation.end({ outcome: "ok", status }))
      const out: Record<string, string | Array<string>> = {}
      for (const [name, value] of Object.entries(answer.headers)) {
        if (value !== undefined && !hopHeaders.has(name)) out[name] = value
      }
      response.writeHead(answer.statusCode ?? 502, out)
      answer.pipe(response)
      response.once("close", () => {
        if (answer.complete) return
        invocation.end({ outcome: "canceled", status })
        upstream.destroy()
      })
    })
    upstream.on("error", (error) => {
      invocation.end(null)
      envelope(response, 503, "worker_unavailable", `the worker runtime did not answer: ${error.message}`)
    })
    incoming.pipe(upstream)
  }

  try {
    await listen(server, options.host, options.port)
  } catch (error) {
    clearInterval(poll)
    await Effect.runPromise(Scope.close(scope, Exit.void))
    throw error
  }
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : options.port
  const shownHost = options.host.includes(":") ? `[${options.host}]` : options.host

  const stop = async () => {
    clearInterval(poll)
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await addons.close()
  }
  return { url: `http://${shownHost}:${port}`, stop }
}
