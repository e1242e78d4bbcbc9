import { Cache, Clock, Context, Duration, Effect, Exit, Layer, Option, Result, Schedule, Stream } from "effect"
import { AccessPolicies } from "@hostplane/core/access/AccessPolicies"
import type { AccessPolicy } from "@hostplane/core/access/AccessPolicy"
import { ArtifactStore, type StoredFile } from "@hostplane/core/deployments/ArtifactStore"
import type { DeploymentRow } from "@hostplane/core/deployments/Deployment"
import { DeploymentStore } from "@hostplane/core/deployments/DeploymentStore"
import { type Manifest, workerEntry } from "@hostplane/core/deployments/Manifest"
import type { ArtifactStoreUnavailable } from "@hostplane/core/errors/Errors"
import type { HostnameRoute } from "@hostplane/core/hostnames/Hostname"
import { Hostnames } from "@hostplane/core/hostnames/Hostnames"
import { canonicalHost } from "@hostplane/core/kernel/HostName"
import type { ProjectId } from "@hostplane/core/kernel/Ids"
import { NodeChanges } from "@hostplane/core/kernel/NodeChanges"
import { NodeRevisions } from "@hostplane/core/kernel/NodeRevisions"
import { makeWakeups } from "@hostplane/core/kernel/Wakeups"
import { ProjectStore } from "@hostplane/core/projects/ProjectStore"

/** A project's live deployment as the edge serves it, and its worker entry (null: assets only). */
export interface LiveDeployment {
  readonly deployment: Pick<DeploymentRow, "id" | "digest" | "manifest">
  readonly entry: string | null
}

/** What the edge needs of a project to answer its hosts. */
export interface ProjectView {
  readonly policy: AccessPolicy
  readonly live: LiveDeployment | undefined
}

/**
 * How often a replica reads the node revision for changes made elsewhere while it does not hear them (decisions.md
 * part 15: within 1 s): before it listens, and while the feed of raises is lost.
 */
export const edgeCachePoll = Duration.millis(250)

/** How often it reads all the same while it hears every raise: the feed's connection could die unnoticed. */
export const edgeCacheHeardPoll = Duration.seconds(5)

/** Entries per map; the least recently used goes first. */
const capacity = 10_000

/** What the edge reads of hosts, projects and bundles (`EdgeView.layer`: the control plane's stores, held in memory). */
export interface EdgeViewShape {
  /** One file of a bundle (`assets/app.js`); small ones come from memory and carry their bytes (`body`). */
  readonly file: (digest: string, path: string) => Effect.Effect<Option.Option<ServedFile>, ArtifactStoreUnavailable>
  /** The project and org an `active` hostname routes to (`host` without a port). */
  readonly route: (host: string) => Effect.Effect<Option.Option<HostnameRoute>>
  /**
   * What the view holds, as a count that rises with every change heard or dropped; `undefined` while nothing is
   * held, when every answer is read afresh.
   */
  readonly generation: () => number | undefined
  /** The project's access policy and live deployment. */
  readonly project: (projectId: ProjectId) => Effect.Effect<ProjectView, ArtifactStoreUnavailable>
}

/** Files up to this size are kept in memory once served; larger ones are read from the store on each request. */
export const edgeFileCacheMaxFile = 256 * 1024

/** The bytes of all the files kept in memory; the least recently served go first. */
export const edgeFileCacheBudget = 32 * 1024 * 1024

/** A bundle file with its bytes in memory. */
export interface HeldFile extends StoredFile {
  readonly body: Uint8Array
}

/** A bundle file as the edge serves it: its bytes in memory (`body`) when it is small. */
export type ServedFile = StoredFile & { readonly body?: Uint8Array }

/**
 * A digest's files never change: small ones are kept in memory (bounded by bytes), so serving them opens no file and
 * asks no bucket. Answers one file of a bundle, with its bytes (`body`) when it is held.
 */
export const makeFileHold = (artifacts: ArtifactStore["Service"]) => {
  const held = new Map<string, HeldFile>()
  let heldBytes = 0
  const hold = (key: string, file: HeldFile) => {
    if (held.has(key)) return
    held.set(key, file)
    heldBytes += file.bytes
    for (const [oldest, entry] of held) {
      if (heldBytes <= edgeFileCacheBudget) break
      held.delete(oldest)
      heldBytes -= entry.bytes
    }
  }
  const file = Effect.fnUntraced(function* (digest: string, path: string) {
    const key = `${digest}\n${path}`
    const known = held.get(key)
    if (known !== undefined) {
      // Most recently served last: the first to go is the one served longest ago.
      held.delete(key)
      held.set(key, known)
      return Option.some<ServedFile>(known)
    }
    const found = yield* artifacts.file(digest, path)
    if (Option.isNone(found) || found.value.bytes > edgeFileCacheMaxFile) return found as Option.Option<ServedFile>
    const body = yield* Stream.mkUint8Array(found.value.content)
    const kept: HeldFile = { path: found.value.path, bytes: body.byteLength, body, content: Stream.succeed(body) }
    hold(key, kept)
    return Option.some<ServedFile>(kept)
  })

  return file
}

/**
 * The edge's view of hosts and projects, kept in memory so a request reads no store: the route of each host, and each
 * project's access policy and live deployment with its worker entry.
 *
 * Every change that alters them (deploy, rollback, hostname, access policy, secret, add-on, project delete) raises the
 * project's node revision. This process drops a project's entries when it commits such a change (`NodeChanges`), and
 * every replica reads the revision when it hears of a raise (`NodeRevisions.watch`), or every `edgeCachePoll` while it
 * does not hear them, and notes the projects stamped since its last read, so a change made by another replica is served
 * within a second. Each entry keeps the revision current when it was read: one read
 * before its project's latest stamp is read again on its next use, one read after is kept (the poll hearing of a change
 * this entry already holds must not drop it). Nothing expires otherwise: while the database does not answer, the edge
 * keeps serving what it holds (spec part 15), and when it answers again, the projects changed meanwhile are read from
 * the revision like any others. Until the first revision is read, nothing is kept.
 */
export const makeEdgeCache = Effect.gen(function* () {
  const hostnames = yield* Hostnames
  const access = yield* AccessPolicies
  const projects = yield* ProjectStore
  const deployments = yield* DeploymentStore
  const artifacts = yield* ArtifactStore
  const revisions = yield* NodeRevisions
  const nodeChanges = yield* NodeChanges

  // A digest's files never change, so its worker entry is read once per digest.
  const entries = new Map<string, string | null>()
  const entryOf = Effect.fnUntraced(function* (digest: string, manifest: Manifest) {
    const known = entries.get(digest)
    if (known !== undefined) return known
    const index = yield* artifacts.index(digest)
    const paths = Option.isSome(index) ? index.value.files.map((file) => file.path) : []
    const found = Result.getOrUndefined(workerEntry(manifest, paths)) ?? null
    if (entries.size > capacity) entries.clear()
    entries.set(digest, found)
    return found
  })

  const loadProject = Effect.fnUntraced(function* (projectId: ProjectId) {
    const project = yield* projects.findById(projectId)
    const liveId = Option.isSome(project) ? project.value.liveDeploymentId : null
    const live = liveId === null ? Option.none() : yield* deployments.get(projectId, liveId)
    const policy = yield* access.policyOf(projectId)
    if (Option.isNone(live)) return { policy, live: undefined } satisfies ProjectView
    const { id, digest, manifest } = live.value
    return {
      policy,
      live: { deployment: { id, digest, manifest }, entry: yield* entryOf(digest, manifest) }
    } satisfies ProjectView
  })

  // Which cached hosts route to which project, the hosts routed nowhere (a name that becomes active routes somewhere
  // new) and the hosts being read now (their answer may predate a change heard meanwhile): what a change drops.
  const hostsOf = new Map<ProjectId, Set<string>>()
  const unrouted = new Set<string>()
  const reading = new Map<string, number>()

  const loadRoute = (host: string): Effect.Effect<Option.Option<HostnameRoute>> =>
    Effect.suspend(() => {
      reading.set(host, (reading.get(host) ?? 0) + 1)
      return hostnames.routeOf(host).pipe(
        Effect.tap((route) =>
          Effect.sync(() => {
            if (Option.isNone(route)) {
              if (unrouted.size >= capacity) unrouted.clear()
              unrouted.add(host)
              return
            }
            const hosts = hostsOf.get(route.value.projectId) ?? new Set<string>()
            hosts.add(host)
            hostsOf.set(route.value.projectId, hosts)
          })
        ),
        Effect.ensuring(
          Effect.sync(() => {
            const left = (reading.get(host) ?? 1) - 1
            if (left === 0) reading.delete(host)
            else reading.set(host, left)
          })
        )
      )
    })

  /** The latest committed revision: where reading changes starts. */
  const current = Effect.map(revisions.changedAfter(Number.MAX_SAFE_INTEGER, 1), (changes) => changes.revision)

  // Revisions commit in order, so what is read after the revision is `seen` holds every change up to `seen`.
  const withSeen = <A, E>(load: Effect.Effect<A, E>) =>
    Effect.map(Effect.zip(current, load), ([seen, value]) => ({ seen, value }))

  // A failed read is never kept: the next request tries again.
  const keepSuccess = <A, E>(exit: Exit.Exit<A, E>) => (Exit.isSuccess(exit) ? Duration.infinity : Duration.zero)
  const routes = yield* Cache.makeWith((host: string) => withSeen(loadRoute(host)), {
    capacity,
    timeToLive: keepSuccess
  })
  const views = yield* Cache.makeWith((projectId: ProjectId) => withSeen(loadProject(projectId)), {
    capacity,
    timeToLive: keepSuccess
  })

  // The latest stamp the poll heard of, per project and of all: an entry read before its project's is stale, a host
  // routed nowhere is stale after any. `floor`: entries read before it are stale (the first revision read, raised when
  // the stamps are trimmed).
  const stamps = new Map<ProjectId, number>()
  let latest = 0
  let floor = Number.MAX_SAFE_INTEGER
  const heard = (projectId: ProjectId, revision: number) => {
    generation += 1
    if (stamps.size >= capacity) {
      stamps.clear()
      floor = latest
    }
    stamps.set(projectId, revision)
    latest = Math.max(latest, revision)
  }

  /** The cached answer, read again once when a stamp heard since makes it stale. */
  const fresh = <K, A, E>(
    cache: Cache.Cache<K, { readonly seen: number; readonly value: A }, E>,
    key: K,
    staleAfter: (value: A) => number
  ) =>
    Effect.flatMap(Cache.get(cache, key), (held) =>
      held.seen >= floor && held.seen >= staleAfter(held.value)
        ? Effect.succeed(held.value)
        : Cache.invalidate(cache, key).pipe(
            Effect.andThen(Cache.get(cache, key)),
            Effect.map((again) => again.value)
          )
    )

  let live = false
  /** Rises with every change heard or dropped: an answer worked out at one count is current while it stays. */
  let generation = 0

  const forget = (projectId: ProjectId) =>
    Effect.gen(function* () {
      generation += 1
      yield* Cache.invalidate(views, projectId)
      const hosts = [...(hostsOf.get(projectId) ?? []), ...unrouted, ...reading.keys()]
      hostsOf.delete(projectId)
      unrouted.clear()
      for (const host of hosts) yield* Cache.invalidate(routes, host)
    })

  // The writer's own process: drop at once, before the answer to the write goes out.
  const unlisten = nodeChanges.listen((projectId) => Effect.runSync(forget(projectId)))
  yield* Effect.addFinalizer(() => Effect.sync(unlisten))

  // Wakes the read: a raise heard, or the feed taken or lost (a raise meanwhile was not heard).
  const wakeups = yield* makeWakeups({
    subscribe: revisions.watch,
    next: (feed) => Effect.as(feed.next, true),
    retry: "1 second",
    lost: "edge cache: the revision feed is lost; polling until it is back"
  }).pipe(Effect.provideService(Clock.Clock, Clock.Clock.defaultValue()))

  const follow = Effect.gen(function* () {
    let after = yield* current
    // Anything read before the revision was known may predate it.
    floor = after
    latest = after
    live = true
    let failing = false
    for (;;) {
      yield* wakeups.wait(failing ? edgeCachePoll : edgeCacheHeardPoll, edgeCachePoll)
      const read = yield* Effect.exit(revisions.changedAfter(after, 1_000))
      if (Exit.isFailure(read)) {
        if (!failing) yield* Effect.logWarning("edge cache: the node revision cannot be read; serving what it holds")
        failing = true
        continue
      }
      if (failing) yield* Effect.logInfo("edge cache: the node revision is read again")
      failing = false
      for (const project of read.value.projects) heard(project.projectId, project.revision)
      after = read.value.revision
    }
  }).pipe(
    // The database may be down when the edge starts: keep nothing until the first revision is read.
    Effect.catchCause((cause) =>
      Effect.andThen(
        Effect.logWarning("edge cache: the node revision cannot be read; reading the stores on every request", cause),
        Effect.fail("retry" as const)
      )
    ),
    Effect.retry(Schedule.spaced("1 second")),
    // The poll paces reads of the database on wall time: a test's clock, moved years ahead, must not spin it.
    Effect.provideService(Clock.Clock, Clock.Clock.defaultValue())
  )
  yield* Effect.forkScoped(follow)

  const file = makeFileHold(artifacts)

  return EdgeView.of({
    /** One file of a bundle (`assets/app.js`); small ones come from memory and carry their bytes (`body`). */
    file,
    /** The project and org an `active` hostname routes to (`host` without a port). */
    route: (host: string): Effect.Effect<Option.Option<HostnameRoute>> => {
      const key = canonicalHost(host)
      return live
        ? fresh(routes, key, (route) => (Option.isSome(route) ? (stamps.get(route.value.projectId) ?? 0) : latest))
        : hostnames.routeOf(key)
    },
    /**
     * What the cache holds, as a count that rises with every change heard or dropped; `undefined` while nothing is
     * held (before the first revision is read), when every answer is read afresh.
     */
    generation: (): number | undefined => (live ? generation : undefined),
    /** The project's access policy and live deployment. */
    project: (projectId: ProjectId): Effect.Effect<ProjectView, ArtifactStoreUnavailable> =>
      live ? fresh(views, projectId, () => stamps.get(projectId) ?? 0) : loadProject(projectId)
  })
})

/** The edge's view of hosts, projects and bundles. */
export class EdgeView extends Context.Service<EdgeView, EdgeViewShape>()("@hostplane/node/edge/EdgeView") {
  /** On the control plane's stores in this process, held in memory and followed by the node revision. */
  static readonly layer = Layer.effect(EdgeView, makeEdgeCache)
}
