import { NodeFileSystem } from "@effect/platform-node"
import * as Pg from "@hostplane/adapters-pg"
import {
  BundleReader,
  GitSshServer,
  MailTransportAuto,
  ObjectStorage,
  PasswordHasherScrypt,
  providersFromEnv,
  SealerAesGcm,
  TokensNode
} from "@hostplane/adapters-providers"
import * as DnsResolverUdp from "@hostplane/adapters-providers/dns/DnsResolverUdp"
import { NameServer } from "@hostplane/adapters-providers/dns/NameServer"
import { configLayerFromEnv, Deployments, Dns, Hostnames, jobHandlers, Jobs, services } from "@hostplane/core"
import { Config, Effect, Layer, Option } from "effect"
import { HttpRouter } from "effect/http"
import * as Path from "node:path"
import { app, Console, Draining, HostAuthenticator, makeMeLane, routerConfig, spanNames } from "@hostplane/http"
import { loadConsole } from "@hostplane/console"
import { edgeListeners, tlsPorts } from "./EdgeListeners.ts"
import { healthRoutes } from "./Health.ts"
import {
  EdgeLive,
  installLane,
  runtimeSettingsConfig,
  WorkerCheckLive,
  WorkerInvoker,
  WorkerInvokerLive,
  WorkerRuntime
} from "@hostplane/node"
import { parseListen } from "./Listen.ts"
import { connectionSettings, httpListener, namedBind, onStopBegin } from "./Listeners.ts"
import { coreWatchLayer } from "./CoreWatch.ts"
import { metricsLayer, requestMetrics } from "./Metrics.ts"
import { logStartup } from "./StartupLog.ts"

/** True when no `DATABASE_URL` is set: the server runs on its embedded defaults. */
const embeddedMode = Effect.map(
  Config.option(Config.String("DATABASE_URL")),
  (url) => Option.isNone(url) || url.value.trim() === ""
)

/**
 * The standalone server: PostgreSQL (embedded unless `DATABASE_URL`), mail through SMTP or the outbox folder,
 * the optional identity provider, the jobs runner (mail, hostname checks, operations, the git retention runner), the
 * `/v1` routes and git smart HTTP on `SERVICE_LISTEN`, and git over SSH on `SERVICE_GIT_SSH_LISTEN`.
 */
export const ServerLive = Layer.unwrap(
  Effect.gen(function* () {
    const embedded = yield* embeddedMode
    const listen = parseListen(yield* Config.String("SERVICE_LISTEN").pipe(Config.withDefault("127.0.0.1:8080")))
    const edgeListen = parseListen(
      yield* Config.String("SERVICE_EDGE_LISTEN").pipe(Config.withDefault("127.0.0.1:8081"))
    )
    // Each area reads its own SERVICE_* settings.
    // A project's hostname is served by this server's edge unless SERVICE_SITE_URL names the public address.
    // SERVICE_AI_CATALOG is a file: the settings read it through Node's file system.
    const settings = configLayerFromEnv({
      devAuthDefault: embedded,
      siteUrlDefault: `http://{host}:${edgeListen.port}/`
    }).pipe(Layer.provide(NodeFileSystem.layer))
    const dataDir = yield* Config.String("SERVICE_DATA_DIR").pipe(Config.withDefault(".hostplane"))
    const embeddedPostgres = embedded ? Path.resolve(dataDir, "pg") : undefined
    const stores = Pg.layer.pipe(Layer.provideMerge(Pg.PgDatabase.layerConfig({ embeddedDirectory: embeddedPostgres })))
    // One runner for every job kind: mail sends (SMTP or the outbox folder), hostname checks, project deletes.
    // Its handlers are every area's `jobs`, built on the same `services` build the routes use.
    const jobs = Jobs.JobRunner.background().pipe(
      Layer.provide(jobHandlers),
      Layer.provide(Layer.merge(services, MailTransportAuto.layerConfig))
    )
    // Hostname ownership is checked through SERVICE_DNS_RESOLVERS (else the system's), and by the org's own zones
    // while the name server runs (a custom hostname there gets its managed record).
    const dnsListen = yield* Config.String("SERVICE_DNS_LISTEN").pipe(Config.withDefault("127.0.0.1:5353"))
    const dnsOff = dnsListen.trim().toLowerCase() === "off"
    const hostedZones = dnsOff ? Hostnames.HostedZones.layerNone : Dns.HostedZonesDns.layer.pipe(Layer.provide(stores))
    const dns = Layer.merge(DnsResolverUdp.layerConfig, hostedZones)
    // Bundles stream into <data dir>/artifacts (decisions.md part 5), under decisions.md's limits; with SERVICE_S3_URL
    // set, artifacts, backups and the storage add-on's objects live in that bucket instead (decisions.md part 15).
    const bundles = BundleReader.layer().pipe(Layer.provideMerge(ObjectStorage.artifactStore))
    // Worker code in workerd (decisions.md part 13) unless SERVICE_WORKERS=off: the runtime and its deploy check are
    // ports (the deploy check runs inside the API's services), the invoker sits behind the edge.
    const workers = yield* runtimeSettingsConfig
    const runtime = workers.enabled
      ? Layer.provideMerge(WorkerCheckLive, WorkerRuntime.layer(workers)).pipe(Layer.provide(bundles))
      : Deployments.WorkerCheck.off
    const invoker = workers.enabled ? WorkerInvokerLive : WorkerInvoker.off
    const ports = jobs.pipe(
      Layer.provideMerge(
        // SERVICE_SEAL_KEY, else the key file <data dir>/seal.key (created on first start).
        Layer.mergeAll(
          stores,
          settings,
          dns,
          SealerAesGcm.layerConfig,
          PasswordHasherScrypt.layer,
          bundles,
          // Every area's provider adapters from its SERVICE_* settings (each area's `*Providers` and `*AreaPg`):
          // sign-in, mail (the relay and the runner share one transport: one build), git, the database and storage
          // add-ons, end-user sign-in, billing, AI, domains, the mail webhook; an adapter without its settings
          // answers as its off form does.
          providersFromEnv.pipe(Layer.provide(settings)),
          Pg.providersFromEnv,
          // A standalone server has no host application whose sign-in it would trust: its own tokens only.
          HostAuthenticator.off,
          // Hashes the session token of every request with node:crypto instead of Web Crypto.
          TokensNode.layer,
          runtime,
          // The edge's certificates: the static one and ACME from SERVICE_EDGE_TLS_LISTEN, SERVICE_TLS_*, SERVICE_ACME_*.
          tlsPorts
        )
      )
    )
    // Keep-alive above load balancers' idle timeout; a stop drains requests in flight (Listeners.ts).
    const connections = yield* connectionSettings
    // The API's log streams end once its listener's graceful stop begins, instead of holding it to the timeout.
    let beginDraining = () => {}
    const drainingBegun = new Promise<void>((resolve) => {
      beginDraining = resolve
    })
    const draining = Layer.succeed(Draining)({ started: Effect.promise(() => drainingBegun) })
    // The web console at `/`, as `npm ci` built it (absent when it was never built: then only the API).
    const withConsole = app.pipe(Layer.provide(Layer.succeed(Console)(loadConsole())))
    const api = HttpRouter.serve(Layer.merge(withConsole, healthRoutes), { disableLogger: true, routerConfig }).pipe(
      // The warm GET /v1/me is answered in front of Effect's HTTP server (MeLane.ts), on the same services.
      Layer.provide(
        Layer.unwrap(
          Effect.map(makeMeLane, (lane) =>
            httpListener({ name: "API", address: listen, setting: "SERVICE_LISTEN" }, connections, (server) => {
              onStopBegin(server, beginDraining)
              if (lane !== undefined) installLane(server, lane)
            })
          )
        ).pipe(Layer.provide(services))
      ),
      // Spans named by route; requests counted by route while SERVICE_METRICS_LISTEN serves metrics (Metrics.ts).
      Layer.provide(Layer.mergeAll(spanNames, requestMetrics, draining)),
      // A frozen PostgreSQL answers 503 no_core in bounded time, never a hang (CoreWatch.ts).
      Layer.provide(coreWatchLayer)
    )
    const metrics = metricsLayer(connections)
    // The data plane's edge (`@hostplane/node`) on its own port, in this process, on the same services (one build
    // shares the `services` layer). With SERVICE_EDGE_TLS_LISTEN, HTTPS beside it (decisions.md part 16).
    const edge = edgeListeners(edgeListen, connections).pipe(
      Layer.provide(invoker),
      Layer.provide(EdgeLive),
      Layer.provide(services)
    )
    // Git over SSH on SERVICE_GIT_SSH_LISTEN (decisions.md part 8), on the same services; `off` starts none.
    const ssh = namedBind(GitSshServer.layerConfig, { name: "git SSH", setting: "SERVICE_GIT_SSH_LISTEN" }).pipe(
      Layer.provide(services)
    )
    // Ports first: the sockets are bound only once the database is up, so no early request waits on a missing handler.
    // Announced once both sockets are bound, so every URL it names answers.
    const announce = Layer.effectDiscard(logStartup({ listen, edgeListen, embeddedPostgres }))
    // The authoritative name server (decisions.md part 8) on SERVICE_DNS_LISTEN, unless it is `off`.
    const nameServer = dnsOff
      ? Layer.empty
      : namedBind(
          Layer.effectDiscard(
            Effect.tap(NameServer.make(parseListen(dnsListen)), (server) =>
              Effect.logInfo(`DNS on ${server.host}:${server.port} (UDP and TCP)`)
            )
          ),
          { name: "DNS", address: parseListen(dnsListen), setting: "SERVICE_DNS_LISTEN" }
        )
    // SSH is bound before the API, so every listener is up once the API answers.
    return announce.pipe(
      Layer.provide(Layer.mergeAll(api, edge, nameServer, metrics)),
      Layer.provide(ssh),
      Layer.provide(ports)
    )
  })
)
