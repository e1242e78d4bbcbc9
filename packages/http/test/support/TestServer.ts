import { afterAll, beforeAll } from "vitest"
import {
  ArtifactStoreDisk,
  BundleReader,
  GitStorageDisk,
  PasswordHasherScrypt,
  SealerAesGcm,
  SshKeyParserSsh2
} from "@hostplane/adapters-providers"
import {
  type Access,
  type ConfigOverrides,
  type Configs,
  configLayer,
  Deployments,
  type Hostnames,
  Kernel,
  Orgs,
  type ProviderPorts,
  providersOff,
  type Secrets,
  type services
} from "@hostplane/core"
import { dnsNone } from "@hostplane/testkit/dns/DnsNone"
import { type EdgeServices, makeEdgeListener } from "@hostplane/node"
import { type Context, Effect, Layer, Logger, Option, References } from "effect"
import * as Fs from "node:fs/promises"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import type { Ports } from "../../src/App.ts"
import { makeNodeListener } from "../../src/server/NodeListener.ts"
import { HostAuthenticator } from "../../src/auth/HostAuthenticator.ts"
import { httpRequest } from "./HttpRequest.ts"

/** The store ports a backend provides; settings and DNS come from the test. */
export type Stores = Exclude<
  Ports,
  Configs | Dns | Crypto | Deployments.BundleReader | Deployments.ArtifactStore | Providers
>

/** The provider ports a suite picks through `TestServerOptions`: each is its `off` form unless the suite gives one. */
export type Providers = ProviderPorts | Kernel.Tokens | HostAuthenticator

/** What hostname verification asks: a resolver and the hosted zones. */
export type Dns = Hostnames.DnsResolver | Hostnames.HostedZones

/** The sealer and the password hasher every suite gets: a fresh random key, and scrypt at its lowest cost. */
export type Crypto = Secrets.Sealer | Access.PasswordHasher

const testCrypto: Layer.Layer<Crypto> = Layer.merge(
  SealerAesGcm.layerEphemeral,
  PasswordHasherScrypt.layerWith({ logN: 10, r: 8, p: 1 })
)

/**
 * The served fibers' log level: warnings and errors reach the console (shown with a failing test), each request's
 * info line does not (formatting it and relaying it to vitest's main process cost more CPU than the request's own
 * test server work in suites of hundreds of requests). `logCapture` sets its own level: it sees every line.
 */
const quietLogs = Layer.succeed(References.MinimumLogLevel, "Warn")

export interface TestServerOptions {
  /** Bundle limits instead of decisions.md's (small ones keep 413 tests fast); each one left out keeps its default. */
  readonly bundleLimits?: Partial<Deployments.BundleLimits>
  /** The artifact folder, for servers that share one as replicas do; a fresh one by default. */
  readonly artifactDir?: string
  /** The access password hasher instead of low-cost scrypt (to observe how the server calls it). */
  readonly passwordHasher?: Layer.Layer<Access.PasswordHasher>
  /** The routes and services to serve instead of `app`: `appWith(...)` with fixture areas. */
  readonly served?: Parameters<typeof makeNodeListener>[1]
  /**
   * The provider adapters or fakes a suite gives, each replacing its port's off form (a later one wins): a payment
   * gateway, an AI upstream, a mail transport, git storage, a database node... A function is called at the server's
   * start, for a layer that reads what the suite's own set-up made (a fake's URL).
   */
  readonly providers?: ReadonlyArray<ProviderLayer | (() => ProviderLayer)>
  /** The host application's sign-in (`HostAuthenticator.fromFunction`); none by default. */
  readonly hostAuthenticator?: Layer.Layer<HostAuthenticator>
}

/** One provider adapter: it may read the settings, and provides some of the provider ports. */
export type ProviderLayer = Layer.Layer<never, unknown, Configs>

/** What `run` may use: the ports and every service the server built. */
export type Served = Ports | Providers | Layer.Success<typeof services>

export interface TestServer {
  readonly url: string
  /** The reference edge on the same services; send `Host` to pick a deployment. */
  readonly edgeUrl: string
  /** The server's own ArtifactStore folder (removed on close): uploads land here. */
  readonly artifactDir: string
  /** The server's own git storage folder (removed on close): bare repositories by repo id. */
  readonly gitDir: string
  /** Runs an effect against the same ports the server uses (to read audit rows, the outbox, ...). */
  readonly run: <A, E>(effect: Effect.Effect<A, E, Served>) => Promise<A>
  readonly close: () => Promise<void>
}

/** Serves the real router over loopback HTTP on an ephemeral port, built through the exported Node listener. */
export const startTestServer = async (
  stores: Layer.Layer<Stores, unknown>,
  settings: ConfigOverrides = {},
  /** More layers built on the same ports (a log capture). */
  extra: Layer.Layer<never, unknown, Ports> = Layer.empty,
  /** DNS for hostname verification; by default no name exists (a `FakeDnsServer` resolver for hostname suites). */
  dns: Layer.Layer<Dns, unknown, Stores> = dnsNone,
  options: TestServerOptions = {}
): Promise<TestServer> => {
  const artifactDir = options.artifactDir ?? (await Fs.mkdtemp(Path.join(Os.tmpdir(), "hostplane-test-artifacts-")))
  const gitDir = await Fs.mkdtemp(Path.join(Os.tmpdir(), "hostplane-test-git-"))
  const git = Layer.merge(GitStorageDisk.layer(gitDir), SshKeyParserSsh2.layer)
  const limits = options.bundleLimits
  const bundles = BundleReader.layer(limits === undefined ? {} : { limits }).pipe(
    Layer.provideMerge(ArtifactStoreDisk.layer(artifactDir))
  )
  const config = configLayer({ ...settings, identity: { devAuth: true, ...settings.identity } })
  const ports = extra.pipe(
    Layer.provideMerge(
      Layer.mergeAll(
        // Every provider in its off form (no edge certificates, no worker runtime unless `extra` provides them: its
        // services win); the last layer of a merge wins, so each one the suite gives replaces its off form.
        providersOff,
        // Hosted zones may read the stores (the DNS area's zones), and the stores may carry a registrar: one build of
        // the stores serves both.
        dns.pipe(Layer.provideMerge(stores)),
        config,
        options.passwordHasher === undefined ? testCrypto : Layer.merge(testCrypto, options.passwordHasher),
        bundles,
        Kernel.Tokens.layer,
        git,
        ...(options.providers ?? []).map((provider) =>
          (typeof provider === "function" ? provider() : provider).pipe(Layer.provide(config))
        ),
        options.hostAuthenticator ?? HostAuthenticator.off,
        quietLogs
      )
    ),
    Layer.provide(Logger.layer([]))
  )
  const { listener, context, dispose } = await makeNodeListener(ports, options.served)
  // The data plane's edge in this process, on the same services, as `npm start` runs it (no worker runtime here).
  const edgeListener = await makeEdgeListener(context as Context.Context<EdgeServices>)
  const server = Http.createServer(listener)
  const edge = Http.createServer(edgeListener.listener)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  await new Promise<void>((resolve) => edge.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    edgeUrl: `http://127.0.0.1:${(edge.address() as AddressInfo).port}`,
    artifactDir,
    gitDir,
    // The context holds every layer of `ports`, the providers included (a runner's ACME client is no `Ports` member).
    run: (effect) => Effect.runPromise(Effect.provideContext(effect, context as Context.Context<Served>)),
    close: async () => {
      server.closeAllConnections()
      edge.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
      await new Promise((resolve) => edge.close(resolve))
      await edgeListener.dispose()
      await dispose()
      await Fs.rm(artifactDir, { recursive: true, force: true })
      await Fs.rm(gitDir, { recursive: true, force: true })
    }
  }
}

export interface Reply {
  readonly status: number
  readonly headers: Headers
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly body: any
}

export interface CallOptions {
  readonly token?: string
  readonly body?: unknown
  /** Sent as is instead of JSON. */
  readonly raw?: string
  readonly headers?: Record<string, string>
}

/**
 * The clients' connections: kept alive, and an idle one is dropped after 1 s, before any server's keep-alive timeout
 * (node's default is 5 s) can close it under a request the client just wrote on it.
 */
const clientAgent = new Http.Agent({ keepAlive: true, timeout: 1_000 })

/** The request headers fetch adds by default, so a server sees what it saw from fetch. */
const fetchDefaults = { accept: "*/*", "accept-language": "*", "sec-fetch-mode": "cors", "user-agent": "node" }

/** A minimal JSON client over real HTTP. */
export const client = (url: string | (() => string)) => {
  const base = typeof url === "string" ? () => url : url
  const call = async (method: string, path: string, options: CallOptions = {}): Promise<Reply> => {
    const headers: Record<string, string> = { ...options.headers }
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
    let body: string | undefined
    if (options.raw !== undefined) body = options.raw
    else if (options.body !== undefined) body = JSON.stringify(options.body)
    if (body !== undefined && headers["content-type"] === undefined) headers["content-type"] = "application/json"
    const response = await httpRequest(`${base()}${path}`, {
      method,
      headers: { ...fetchDefaults, ...headers },
      body,
      agent: clientAgent
    })
    const text = response.text
    let parsed: unknown = text
    if ((response.headers.get("content-type") ?? "").includes("json") && text !== "") parsed = JSON.parse(text)
    return { status: response.status, headers: response.headers, body: parsed }
  }
  return {
    call,
    get: (path: string, options?: CallOptions) => call("GET", path, options),
    post: (path: string, body?: unknown, options?: CallOptions) => call("POST", path, { ...options, body }),
    put: (path: string, body?: unknown, options?: CallOptions) => call("PUT", path, { ...options, body }),
    patch: (path: string, body?: unknown, options?: CallOptions) => call("PATCH", path, { ...options, body }),
    delete: (path: string, body?: unknown, options?: CallOptions) => call("DELETE", path, { ...options, body }),
    /** Dev login; answers the session. */
    login: async (subject: string, profile: { email?: string; name?: string } = {}) => {
      const reply = await call("POST", "/v1/auth/dev/login", { body: { subject, ...profile } })
      if (reply.status !== 200) throw new Error(`login failed: ${reply.status} ${JSON.stringify(reply.body)}`)
      return reply.body as { token: string; userId: string; subject: string; expiresAt: string }
    }
  }
}

export type Client = ReturnType<typeof client>

/** A random suffix so tests sharing one database never collide. */
export const unique = (prefix: string) => `${prefix}-${Math.random().toString(36).slice(2, 10)}`

/** The audit rows of an org, oldest first. */
export const auditOf = (server: TestServer, slug: string) =>
  server.run(
    Effect.gen(function* () {
      const store = yield* Orgs.OrgStore
      const audit = yield* Kernel.AuditLog
      const org = yield* store.findBySlug(slug)
      return Option.isSome(org) ? yield* audit.list({ orgId: org.value.id }) : []
    })
  )

export interface Session {
  readonly token: string
  readonly userId: string
  readonly subject: string
}

export interface Suite {
  readonly server: TestServer
  readonly api: Client
  /** An admin of every org made with `newOrg`, signed in once per suite. */
  readonly admin: Session
  /** Signed in, member of nothing the suite makes. */
  readonly outsider: Session
  /** A fresh org administered by `admin`. */
  readonly newOrg: (name?: string) => Promise<string>
  /** A fresh project in `slug`, created by `admin`. */
  readonly newProject: (
    slug: string
  ) => Promise<{ readonly name: string; readonly id: Kernel.ProjectId; readonly hostname: string }>
  /** A new user with `role` in `slug`, added by `admin`. */
  readonly withRole: (
    slug: string,
    role: "viewer" | "member" | "admin",
    profile?: { email?: string }
  ) => Promise<Session>
}

/**
 * Starts one server for the enclosing `describe` (in `beforeAll`, closed in `afterAll`) with an admin and an outsider
 * signed in. `api`, `newOrg` and `withRole` may be taken at once; `server`, `admin` and `outsider` are read inside
 * tests, once the server is up.
 */
export const useSuite = (
  stores: () => Layer.Layer<Stores, unknown>,
  settings: ConfigOverrides = {},
  extra?: Layer.Layer<never, unknown, Ports>,
  dns?: Layer.Layer<Dns, unknown, Stores>,
  options?: TestServerOptions
): Suite => {
  const suite = {} as { -readonly [K in keyof Suite]: Suite[K] }
  const api = client(() => suite.server.url)
  suite.api = api
  suite.newOrg = async (name = "Org") => {
    const slug = unique("org")
    const reply = await api.post("/v1/orgs", { name, slug }, { token: suite.admin.token })
    if (reply.status !== 201) throw new Error(`org create failed: ${reply.status}`)
    return slug
  }
  suite.newProject = async (slug) => {
    const reply = await api.post(`/v1/orgs/${slug}/projects`, { name: unique("site") }, { token: suite.admin.token })
    if (reply.status !== 201) throw new Error(`project create failed: ${reply.status}`)
    return { name: reply.body.name, id: Kernel.makeId("prj", reply.body.id), hostname: reply.body.hostname }
  }
  suite.withRole = async (slug, role, profile = {}) => {
    const session = await api.login(unique(role), profile)
    const reply = await api.post(
      `/v1/orgs/${slug}/members`,
      { provider: "dev", subject: session.subject, role },
      { token: suite.admin.token }
    )
    if (reply.status !== 201) throw new Error(`member add failed: ${reply.status}`)
    return session
  }
  beforeAll(async () => {
    suite.server = await startTestServer(stores(), settings, extra, dns, options)
    suite.admin = await api.login(unique("admin"))
    suite.outsider = await api.login(unique("outsider"))
  })
  afterAll(() => suite.server?.close())
  return suite
}

/** Every JSON log line the server writes, to prove that no secret reaches a log; pass `layer` as a suite's `extra`. */
export const logCapture = () => {
  const lines: Array<string> = []
  return {
    lines,
    layer: Layer.merge(
      Logger.layer([Logger.map(Logger.formatJson, (line) => void lines.push(line))]),
      Layer.succeed(References.MinimumLogLevel, "Info")
    )
  }
}
