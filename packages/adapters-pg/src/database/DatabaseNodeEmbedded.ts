import { PgClient } from "@effect/sql-pg"
import { Database, type Kernel } from "@hostplane/core"
import { Config, Context, Duration, Effect, Exit, Layer, Option, Redacted, Scope, Semaphore, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { PassThrough } from "node:stream"
import { createGunzip, createGzip } from "node:zlib"
import * as TarStream from "tar-stream"
import * as EmbeddedPostgres from "../embedded/EmbeddedPostgres.ts"
import * as Certificates from "./Certificates.ts"
import { addDataDirectory, addFile, addText, chownTree, extract, gunzipChunk } from "./PhysicalImage.ts"
import { isScramVerifier, scramVerifier } from "./Scram.ts"

type ProjectId = Kernel.ProjectId

// Every cluster serves TLS and refuses other roles without it.
const sslmode = "require" as const

export interface DatabaseNodeEmbeddedOptions {
  /** The clusters' folder (decisions.md part 8: `<data dir>/node/db`): one `<project id>/` each. */
  readonly directory: string
  /**
   * The home its databases are recorded with (replicas hand their clusters' work to it); default the name kept in
   * `<directory>/.home`, made at the first start, so the home moves with the folder.
   */
  readonly home?: string | undefined
  /** The host clients are told to connect to (`SERVICE_NODE_DB_HOST`); clusters listen on 127.0.0.1. */
  readonly host?: string | undefined
  /** False skips flushes to disk: throwaway test clusters. Default true. */
  readonly durable?: boolean | undefined
  /** How long a cluster's server certificate is valid. Default 397 days. */
  readonly certificateLifetime?: Duration.Input | undefined
  /** A server certificate this close to its end is issued again, at a start or a renewal round. Default 30 days. */
  readonly renewBefore?: Duration.Input | undefined
  /** How often running clusters' certificates are looked at (and renewed when due). Default 1 hour. */
  readonly renewalRound?: Duration.Input | undefined
}

interface Cluster {
  readonly scope: Scope.Closeable
  readonly port: number
  readonly url: Redacted.Redacted<string>
}

const failed = (message: string) => (cause: unknown) =>
  new Database.DatabaseNodeError({
    reason: "failed",
    message: `${message}: ${cause instanceof Error ? cause.message : String(cause)}`
  })

const io = <A>(message: string, run: () => Promise<A>) => Effect.tryPromise({ try: run, catch: failed(message) })

/** Role names the node makes: the project role is the project id, tokens are `tok_...`; both are plain identifiers. */
const identifier = (name: string): string => {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`not a role name: ${name}`)
  return `"${name}"`
}
const literal = (text: string): string => `'${text.replace(/'/g, "''")}'`
const verifierLiteral = (verifier: string): string => {
  if (!isScramVerifier(verifier)) throw new Error("not a SCRAM-SHA-256 verifier")
  return literal(verifier)
}

const exists = (path: string) =>
  Effect.promise(() =>
    Fs.access(path).then(
      () => true,
      () => false
    )
  )

/** The `postgres` user's ids, which own a cluster's files when we run as root. */
const postgresIds = Effect.promise(async () => {
  const passwd = await Fs.readFile("/etc/passwd", "utf8").catch(() => "")
  const line = passwd.split("\n").find((entry) => entry.startsWith("postgres:"))
  const [, , uid, gid] = line?.split(":") ?? []
  return uid === undefined || gid === undefined ? undefined : { uid: Number(uid), gid: Number(gid) }
})

type Query = (
  text: string,
  params?: ReadonlyArray<unknown>
) => Effect.Effect<ReadonlyArray<any>, Database.DatabaseNodeError>

const walFile = /^[0-9A-F]{24}$/

/**
 * The image's copy of the cluster's superuser password (outside `data/` on the node, `<cluster>/password`): the image
 * holds that role's verifier, so a node that rebuilds the database from it after its home was lost must log in with
 * the same password. The role connects only over the node machine's loopback (the `hba` below); the image already
 * holds every row and verifier of the database, so the bucket is protected as the data is.
 */
const superuserEntry = "hostplane_superuser_password"

/**
 * Each cluster's `hba_file`, written at every start: the node's own superuser connects over loopback (the admin
 * connection), every other role (the project role, tokens) only over TLS.
 */
const hba = `# Written by hostplane's node admin at every start of this cluster.
hostnossl all postgres 127.0.0.1/32 scram-sha-256
hostssl   all all      all          scram-sha-256
`

/** Writes a file whole: a crash leaves the old one or the new one, never half of either. */
const replace = async (file: string, contents: string) => {
  await Fs.writeFile(`${file}.tmp`, contents, { mode: 0o600 })
  await Fs.rename(`${file}.tmp`, file)
}

/**
 * The reference node admin (decisions.md part 8): each project database is its own PostgreSQL cluster from the
 * embedded binaries, under `<directory>/<project id>/` (`data/`, the superuser `password`, its `port`), started again
 * on its first use after the node starts. Images are base backups taken through `pg_backup_start`/`pg_backup_stop`, a temporary physical
 * replication slot holding the WAL they need until it is copied.
 */
export const make = Effect.fn("DatabaseNodeEmbedded.make")(function* (options: DatabaseNodeEmbeddedOptions) {
  const root = Path.resolve(options.directory)
  const host = options.host ?? "127.0.0.1"
  const clusters = new Map<ProjectId, Cluster>()
  const locks = new Map<ProjectId, Semaphore.Semaphore>()
  const asRoot = process.getuid?.() === 0

  // Every name a client may be told to connect to: the server certificates name them all (verify-full).
  const hosts = [...new Set([host, "127.0.0.1", "localhost"])]

  /** The node's certificate authority, made once under `<directory>/.tls/`; it signs every cluster's certificate. */
  const authority = yield* io("cannot prepare the certificate authority", async () => {
    const folder = Path.join(root, ".tls")
    await Fs.mkdir(folder, { recursive: true, mode: 0o700 })
    const keyFile = Path.join(folder, "ca.key")
    const certificateFile = Path.join(folder, "ca.crt")
    const kept = await Promise.all([Fs.readFile(keyFile, "utf8"), Fs.readFile(certificateFile, "utf8")]).catch(
      () => undefined
    )
    if (kept !== undefined && Certificates.matches(kept[0], kept[1])) return { key: kept[0], certificate: kept[1] }
    const made = Certificates.makeAuthority("hostplane database node CA")
    await replace(keyFile, made.key)
    await replace(certificateFile, made.certificate)
    return made
  })

  // The clusters live on this machine only: replicas sharing the control database tell them apart by this name.
  const home =
    options.home ??
    (yield* io("cannot read the node's home", async () => {
      await Fs.mkdir(root, { recursive: true, mode: 0o700 })
      const file = Path.join(root, ".home")
      const kept = (await Fs.readFile(file, "utf8").catch(() => "")).trim()
      if (/^[a-z0-9_]{1,64}$/.test(kept)) return kept
      const made = `node_${randomBytes(8).toString("hex")}`
      await replace(file, `${made}\n`)
      return made
    }))

  const dirOf = (projectId: ProjectId) => Path.join(root, projectId)
  const tlsOf = (projectId: ProjectId) => {
    const folder = Path.join(dirOf(projectId), "tls")
    return {
      folder,
      key: Path.join(folder, "server.key"),
      certificate: Path.join(folder, "server.crt"),
      hba: Path.join(folder, "pg_hba.conf")
    }
  }

  const days = (input: Duration.Input) => Duration.toMillis(input) / 86_400_000
  const lifetimeDays = days(options.certificateLifetime ?? "397 days")
  const renewBeforeDays = days(options.renewBefore ?? "30 days")

  /**
   * Issues the cluster's server certificate again when it is missing, within `renewBefore` of its end, not naming every
   * host, or not matching its key; answers whether it did. As root the files belong to `postgres`, which PostgreSQL
   * requires of its key.
   */
  const renewCertificate = (projectId: ProjectId) =>
    Effect.gen(function* () {
      const files = tlsOf(projectId)
      const ids = asRoot ? yield* postgresIds : undefined
      return yield* io("cannot prepare the cluster's TLS files", async () => {
        await Fs.mkdir(files.folder, { recursive: true, mode: 0o700 })
        const [key, certificate] = await Promise.all([
          Fs.readFile(files.key, "utf8").catch(() => ""),
          Fs.readFile(files.certificate, "utf8").catch(() => "")
        ])
        if (Certificates.stillGood(key, certificate, authority.certificate, hosts, renewBeforeDays)) return false
        const issued = Certificates.issueServer(authority, projectId, hosts, lifetimeDays)
        await replace(files.key, issued.key)
        await replace(files.certificate, issued.certificate)
        if (ids !== undefined) {
          for (const path of [files.folder, files.key, files.certificate]) await Fs.chown(path, ids.uid, ids.gid)
        }
        return true
      })
    })

  /**
   * Before every start: the server certificate (see `renewCertificate`) and the `hba_file`, both outside the data
   * directory so generations never carry the key.
   */
  const prepareTls = (projectId: ProjectId) =>
    Effect.gen(function* () {
      yield* renewCertificate(projectId)
      const files = tlsOf(projectId)
      const ids = asRoot ? yield* postgresIds : undefined
      yield* io("cannot prepare the cluster's TLS files", async () => {
        await replace(files.hba, hba)
        if (ids !== undefined) {
          for (const path of [files.folder, files.key, files.certificate, files.hba]) {
            await Fs.chown(path, ids.uid, ids.gid)
          }
        }
      })
    })
  const dataOf = (projectId: ProjectId) => Path.join(dirOf(projectId), "data")
  const owner = (projectId: ProjectId): string => projectId.toLowerCase().replace(/[^a-z0-9_]/g, "_")

  /** One operation at a time per cluster: creation, backups, restores and token changes never interleave. */
  const serially = <A, E, R>(projectId: ProjectId, effect: Effect.Effect<A, E, R>) =>
    Effect.suspend(() => {
      let lock = locks.get(projectId)
      if (lock === undefined) {
        lock = Semaphore.makeUnsafe(1)
        locks.set(projectId, lock)
      }
      return lock.withPermit(effect)
    })

  const startCluster = Effect.fnUntraced(function* (projectId: ProjectId) {
    const dir = dirOf(projectId)
    const data = dataOf(projectId)
    // A restore interrupted between its two renames left the previous data aside: put it back.
    if (!(yield* exists(data)) && (yield* exists(`${data}.previous`))) {
      yield* io("cannot recover the previous data", () => Fs.rename(`${data}.previous`, data))
    }
    yield* io("cannot prepare the cluster folder", () => Fs.mkdir(dir, { recursive: true, mode: 0o700 }))
    const portFile = Path.join(dir, "port")
    const port = (yield* exists(portFile))
      ? Number((yield* io("cannot read the port", () => Fs.readFile(portFile, "utf8"))).trim())
      : yield* EmbeddedPostgres.freePort.pipe(
          Effect.tap((port) => io("cannot keep the port", () => Fs.writeFile(portFile, `${port}\n`, { mode: 0o600 }))),
          Effect.mapError(failed("no free port"))
        )
    const scope = yield* Scope.make()
    const instance = yield* EmbeddedPostgres.start({
      directory: dir,
      port,
      durable: options.durable,
      maxConnections: 50,
      settings: {
        ssl: "on",
        ssl_cert_file: tlsOf(projectId).certificate,
        ssl_key_file: tlsOf(projectId).key,
        hba_file: tlsOf(projectId).hba
      },
      beforeStart: prepareTls(projectId)
    }).pipe(
      Scope.provide(scope),
      Effect.onError(() => Scope.close(scope, Exit.void)),
      Effect.mapError((error) => failed("cannot start the cluster")(error))
    )
    const cluster: Cluster = { scope, port, url: instance.url }
    clusters.set(projectId, cluster)
    return cluster
  })

  const stopCluster = (projectId: ProjectId) =>
    Effect.suspend(() => {
      const cluster = clusters.get(projectId)
      if (cluster === undefined) return Effect.void
      clusters.delete(projectId)
      return Scope.close(cluster.scope, Exit.void)
    })

  yield* Effect.addFinalizer(() =>
    Effect.forEach([...clusters.keys()], stopCluster, { concurrency: "unbounded", discard: true })
  )

  /** Runs `use` on one reserved superuser connection to `database` of the project's cluster. */
  const admin = <A, E, R>(
    projectId: ProjectId,
    database: string,
    use: (query: Query) => Effect.Effect<A, E, R>
  ): Effect.Effect<A, E | Database.DatabaseNodeError, Exclude<R, Scope.Scope>> =>
    Effect.gen(function* () {
      const cluster = clusters.get(projectId)
      if (cluster === undefined) {
        return yield* new Database.DatabaseNodeError({ reason: "unavailable", message: `no cluster for ${projectId}` })
      }
      const url = Redacted.make(Redacted.value(cluster.url).replace(/\/postgres$/, `/${database}`))
      const context = yield* Layer.build(PgClient.layer({ url, maxConnections: 1 })).pipe(
        Effect.mapError(failed("cannot connect to the cluster"))
      )
      const connection = yield* Context.get(context, SqlClient.SqlClient).reserve.pipe(
        Effect.mapError(failed("cannot connect to the cluster"))
      )
      return yield* use((text, params = []) =>
        connection.execute(text, params, undefined).pipe(Effect.mapError(failed("the cluster refused a statement")))
      )
    }).pipe(Effect.scoped)

  const running = Effect.fnUntraced(function* (projectId: ProjectId) {
    const cluster = clusters.get(projectId)
    if (cluster !== undefined) return Option.some(cluster)
    if (!(yield* exists(Path.join(dataOf(projectId), "PG_VERSION")))) return Option.none<Cluster>()
    return Option.some(yield* startCluster(projectId))
  })

  const require = Effect.fnUntraced(function* (projectId: ProjectId) {
    const cluster = yield* running(projectId)
    if (Option.isNone(cluster)) {
      return yield* new Database.DatabaseNodeError({
        reason: "unavailable",
        message: `the node holds no database for ${projectId}`
      })
    }
    return cluster.value
  })

  const ensure = Effect.fn("DatabaseNodeEmbedded.ensure")((projectId: ProjectId, ownerVerifier: string) =>
    serially(
      projectId,
      Effect.gen(function* () {
        const cluster = Option.getOrUndefined(yield* running(projectId)) ?? (yield* startCluster(projectId))
        const role = owner(projectId)
        yield* admin(projectId, "postgres", (query) =>
          Effect.gen(function* () {
            const roles = yield* query("select 1 from pg_roles where rolname = $1", [role])
            if (roles.length === 0) {
              yield* query(`create role ${identifier(role)} login password ${verifierLiteral(ownerVerifier)}`)
            }
            const databases = yield* query("select 1 from pg_database where datname = 'app'")
            if (databases.length === 0) yield* query(`create database app owner ${identifier(role)}`)
          })
        )
        return { host, port: cluster.port, sslmode }
      })
    )
  )

  // Serial with `ensure`: a node converging while a database is being made would otherwise start the half-made
  // cluster a second time (its data folder exists before `ensure` has started it).
  const endpoint = Effect.fn("DatabaseNodeEmbedded.endpoint")((projectId: ProjectId) =>
    serially(
      projectId,
      Effect.map(running(projectId), (cluster) =>
        Option.isSome(cluster) ? { host, port: cluster.value.port, sslmode } : undefined
      )
    )
  )

  const listTokens = (projectId: ProjectId) =>
    admin(projectId, "postgres", (query) =>
      query(
        `select r.rolname from pg_roles r join pg_auth_members m on m.member = r.oid
         join pg_roles o on o.oid = m.roleid where o.rolname = $1 order by r.rolname`,
        [owner(projectId)]
      )
    ).pipe(Effect.map((rows) => rows.map((row) => String(row.rolname))))

  const tokens = Effect.fn("DatabaseNodeEmbedded.tokens")(function* (projectId: ProjectId) {
    yield* require(projectId)
    return yield* listTokens(projectId)
  })

  const putToken = (projectId: ProjectId, token: Database.NodeToken) =>
    admin(projectId, "postgres", (query) =>
      Effect.gen(function* () {
        const role = identifier(token.user)
        const present = yield* query("select 1 from pg_roles where rolname = $1", [token.user])
        if (present.length === 0) {
          yield* query(
            `create role ${role} login password ${verifierLiteral(token.verifier)} in role ${identifier(owner(projectId))}`
          )
        } else {
          yield* query(`alter role ${role} login password ${verifierLiteral(token.verifier)}`)
        }
        // The session runs as the project role: what a token creates belongs to the project.
        yield* query(`alter role ${role} set role = ${literal(owner(projectId))}`)
      })
    )

  const dropToken = (projectId: ProjectId, user: string) =>
    admin(projectId, "postgres", (query) =>
      Effect.gen(function* () {
        const present = yield* query("select 1 from pg_roles where rolname = $1", [user])
        if (present.length === 0) return
        // NOLOGIN first, so no session starts between ending the open ones and the drop.
        yield* query(`alter role ${identifier(user)} nologin`)
        yield* query("select pg_terminate_backend(pid) from pg_stat_activity where usename = $1", [user])
        yield* query(`drop role ${identifier(user)}`)
      })
    )

  const createToken = Effect.fn("DatabaseNodeEmbedded.createToken")((projectId: ProjectId, token: Database.NodeToken) =>
    serially(projectId, Effect.andThen(require(projectId), putToken(projectId, token)))
  )

  const deleteToken = Effect.fn("DatabaseNodeEmbedded.deleteToken")((projectId: ProjectId, user: string) =>
    serially(projectId, Effect.andThen(require(projectId), dropToken(projectId, user)))
  )

  const syncTokens = Effect.fn("DatabaseNodeEmbedded.syncTokens")(
    (projectId: ProjectId, wanted: ReadonlyArray<Database.NodeToken>) =>
      serially(
        projectId,
        Effect.gen(function* () {
          yield* require(projectId)
          const keep = new Set(wanted.map((token) => token.user))
          for (const user of yield* listTokens(projectId)) if (!keep.has(user)) yield* dropToken(projectId, user)
          for (const token of wanted) yield* putToken(projectId, token)
        })
      )
  )

  const allowConnections = (projectId: ProjectId, allow: boolean) =>
    serially(
      projectId,
      Effect.andThen(
        require(projectId),
        admin(projectId, "postgres", (query) =>
          Effect.gen(function* () {
            yield* query(`alter database app allow_connections ${allow ? "true" : "false"}`)
            if (!allow) {
              yield* query("select pg_terminate_backend(pid) from pg_stat_activity where datname = 'app'")
            }
          })
        )
      )
    )

  const drain = Effect.fn("DatabaseNodeEmbedded.drain")((projectId: ProjectId) => allowConnections(projectId, false))
  const resume = Effect.fn("DatabaseNodeEmbedded.resume")((projectId: ProjectId) => allowConnections(projectId, true))

  const backup = <A, E, R>(
    projectId: ProjectId,
    write: (image: Stream.Stream<Uint8Array, Database.DatabaseNodeError>) => Effect.Effect<A, E, R>
  ) =>
    serially(
      projectId,
      Effect.gen(function* () {
        yield* require(projectId)
        const data = dataOf(projectId)
        return yield* admin(projectId, "postgres", (query) =>
          Effect.gen(function* () {
            // The slot keeps every WAL segment from the backup's start until this session ends.
            yield* query("select 1 from pg_create_physical_replication_slot($1, true, true)", [
              `hp_backup_${process.pid}`
            ])
            const [start] = yield* query(
              "select pg_walfile_name(lsn) as wal from pg_backup_start('hostplane', true) as lsn"
            )
            const pack = TarStream.pack()
            const gzip = createGzip({ level: 6 })
            const out = new PassThrough()
            pack.pipe(gzip).pipe(out)
            gzip.on("error", (error) => out.destroy(error))
            const image = Stream.fromAsyncIterable(out as AsyncIterable<Uint8Array>, failed("the image stream broke"))
            const produce = Effect.gen(function* () {
              yield* io("cannot read the data directory", () => addDataDirectory(pack, data))
              const [stop] = yield* query("select labelfile, spcmapfile, lsn::text as lsn from pg_backup_stop(false)")
              const [last] = yield* query("select pg_walfile_name($1::pg_lsn) as wal", [stop.lsn])
              yield* query("select pg_switch_wal()::text")
              const label = String(stop.labelfile)
              yield* io("cannot add the backup label", () => addText(pack, "backup_label", label))
              yield* io("cannot add the superuser password", async () =>
                addText(pack, superuserEntry, await Fs.readFile(Path.join(dirOf(projectId), "password"), "utf8"))
              )
              if (String(stop.spcmapfile ?? "") !== "") {
                yield* io("cannot add the tablespace map", () =>
                  addText(pack, "tablespace_map", String(stop.spcmapfile))
                )
              }
              const first = String(start.wal)
              const end = String(last.wal)
              const names = (yield* io("cannot list the WAL", () => Fs.readdir(Path.join(data, "pg_wal")))).sort()
              for (const name of names) {
                const wanted = (walFile.test(name) && name >= first && name <= end) || name.endsWith(".history")
                if (wanted) yield* io("cannot add a WAL file", () => addFile(pack, data, `pg_wal/${name}`))
              }
              yield* Effect.sync(() => pack.finalize())
              const timeline = /START TIMELINE: (\d+)/.exec(label)?.[1]
              return Number(timeline ?? 1)
            }).pipe(
              Effect.onError(() =>
                Effect.sync(() => {
                  // The reader may already be gone (interrupted): without a listener the error would be uncaught.
                  // The same for the gzip output, which the pack's destruction reaches through the pipe.
                  pack.on("error", () => {})
                  out.on("error", () => {})
                  pack.destroy(new Error("the backup was abandoned"))
                })
              )
            )
            const [written, epoch] = yield* Effect.all([write(image), produce], { concurrency: 2 })
            return { epoch, written }
          })
        )
      })
    )

  const restore = <E>(projectId: ProjectId, image: Stream.Stream<Uint8Array, E>, epoch: number) =>
    serially(
      projectId,
      Effect.gen(function* () {
        // A removed database stays removed: a restore arriving after it must not bring a cluster back.
        if (!(yield* exists(dirOf(projectId)))) {
          return yield* new Database.DatabaseNodeError({
            reason: "unavailable",
            message: `the node holds no database for ${projectId}`
          })
        }
        const data = dataOf(projectId)
        const incoming = `${data}.restore`
        const previous = `${data}.previous`
        yield* stopCluster(projectId)
        if (!(yield* exists(data)) && (yield* exists(previous))) {
          yield* io("cannot recover the previous data", () => Fs.rename(previous, data))
        }
        yield* io("cannot clear the restore folder", () => Fs.rm(incoming, { recursive: true, force: true }))
        const tar = createGunzip({ chunkSize: gunzipChunk })
        const extracting = io("cannot unpack the image", () => extract(tar, incoming))
        const feeding = Stream.runForEach(image, (chunk) =>
          Effect.callback<void>((resume) => {
            if (tar.write(chunk)) resume(Effect.void)
            else tar.once("drain", () => resume(Effect.void))
          })
        ).pipe(
          Effect.andThen(Effect.sync(() => tar.end())),
          Effect.onError(() => Effect.sync(() => tar.destroy(new Error("the image stream broke"))))
        )
        yield* Effect.all([feeding, extracting], { concurrency: 2, discard: true })
        const wal = Path.join(incoming, "pg_wal")
        const labelTimeline = Number(
          /START TIMELINE: (\d+)/.exec(
            yield* io("the image has no backup label", () => Fs.readFile(Path.join(incoming, "backup_label"), "utf8"))
          )?.[1] ?? 1
        )
        // Promotion picks one more than the highest timeline with a history file: mark the ones in between as used.
        for (let timeline = labelTimeline + 1; timeline < epoch; timeline++) {
          const history = Path.join(wal, `${timeline.toString(16).toUpperCase().padStart(8, "0")}.history`)
          if (!(yield* exists(history))) {
            yield* io("cannot mark a timeline", () =>
              Fs.writeFile(history, `# timeline ${timeline} was used before a restore of this database\n`, {
                mode: 0o600
              })
            )
          }
        }
        yield* io("cannot prepare recovery", async () => {
          await Fs.writeFile(Path.join(incoming, "recovery.signal"), "", { mode: 0o600 })
          await Fs.appendFile(
            Path.join(incoming, "postgresql.auto.conf"),
            // No archive: the image carries its WAL in pg_wal, which recovery reads once the command finds nothing.
            "restore_command = 'false'\nrecovery_target = 'immediate'\nrecovery_target_action = 'promote'\nrecovery_target_timeline = 'current'\n"
          )
          await Fs.chmod(incoming, 0o700)
        })
        const ids = asRoot ? yield* postgresIds : undefined
        if (ids !== undefined)
          yield* io("cannot give the data to postgres", () => chownTree(incoming, ids.uid, ids.gid))
        // An image from another node carries its superuser's password: the cluster is reached with it from now on.
        const passwordFile = Path.join(dirOf(projectId), "password")
        const carried = Path.join(incoming, superuserEntry)
        const ownPassword = yield* io("cannot read the superuser password", () => Fs.readFile(passwordFile, "utf8"))
        const imagePassword = (yield* exists(carried))
          ? yield* io("cannot read the image's superuser password", () => Fs.readFile(carried, "utf8"))
          : ownPassword
        yield* io("cannot clear the image's superuser password", () => Fs.rm(carried, { force: true }))
        // A restore repeated after a crash between these renames finds the previous data still aside: clear it first.
        yield* io("cannot clear the previous data", () => Fs.rm(previous, { recursive: true, force: true }))
        if (yield* exists(data)) yield* io("cannot set the data aside", () => Fs.rename(data, previous))
        yield* io("cannot put the image in place", () => Fs.rename(incoming, data))
        if (imagePassword !== ownPassword) {
          yield* io("cannot keep the superuser password", () => replace(passwordFile, imagePassword))
        }
        const started = yield* Effect.exit(startCluster(projectId))
        if (Exit.isFailure(started)) {
          yield* stopCluster(projectId)
          if (imagePassword !== ownPassword) {
            yield* io("cannot put the superuser password back", () => replace(passwordFile, ownPassword))
          }
          yield* io("cannot drop the failed image", () => Fs.rm(data, { recursive: true, force: true }))
          yield* io("cannot put the data back", () => Fs.rename(previous, data))
          yield* startCluster(projectId)
          return yield* started
        }
        yield* admin(projectId, "postgres", (query) =>
          Effect.gen(function* () {
            yield* query("alter system reset restore_command")
            yield* query("alter system reset recovery_target")
            yield* query("alter system reset recovery_target_action")
            yield* query("alter system reset recovery_target_timeline")
            yield* query("select pg_reload_conf()")
          })
        )
        yield* io("cannot drop the previous data", () => Fs.rm(previous, { recursive: true, force: true }))
      })
    )

  const remove = Effect.fn("DatabaseNodeEmbedded.remove")((projectId: ProjectId) =>
    serially(
      projectId,
      Effect.gen(function* () {
        yield* stopCluster(projectId)
        if (!(yield* exists(dirOf(projectId)))) return
        const tombstone = Path.join(root, ".tombstone")
        yield* io("cannot move the cluster to the tombstone", async () => {
          await Fs.mkdir(tombstone, { recursive: true, mode: 0o700 })
          await Fs.rename(dirOf(projectId), Path.join(tombstone, `${projectId}-${Date.now()}`))
        })
      })
    )
  )

  // A cluster's folder is named by its project; the dot-named entries are the node's own (home, TLS, tombstone).
  const held = Effect.map(
    io("cannot list the clusters", () => Fs.readdir(root)),
    (names) => names.filter((name) => !name.startsWith(".")).map((name) => name as ProjectId)
  )

  // No cluster is started here, only on its first use (`running`): a copy whose database moved to another replica,
  // or lost its record, while this one was away would serve its old data until it is retired. `Databases` starts
  // this replica's own at its first generations round and retires the others without starting them.
  yield* io("cannot prepare the node folder", () => Fs.mkdir(root, { recursive: true, mode: 0o700 }))

  /**
   * A cluster that runs for months outlives its certificate: each round issues again every running cluster's
   * certificate that is due and has PostgreSQL load it with `pg_reload_conf()` (open sessions keep theirs; new ones get
   * the new certificate). Between a restore's stop and start the cluster is not in `clusters`, and its start prepares
   * the files itself.
   */
  const renewRunning = Effect.suspend(() =>
    Effect.forEach(
      [...clusters.keys()],
      (projectId) =>
        serially(
          projectId,
          Effect.gen(function* () {
            if (!clusters.has(projectId)) return
            if (!(yield* renewCertificate(projectId))) return
            yield* admin(projectId, "postgres", (query) => query("select pg_reload_conf()"))
            yield* Effect.logInfo("a database cluster's TLS certificate was renewed", { projectId })
          })
        ).pipe(
          Effect.catchCause((cause) =>
            Effect.logWarning("cannot renew a database cluster's TLS certificate", { projectId, cause })
          )
        ),
      { discard: true }
    )
  )
  yield* Effect.forkScoped(Effect.forever(Effect.andThen(Effect.sleep(options.renewalRound ?? "1 hour"), renewRunning)))

  return Database.DatabaseNode.of({
    authority: authority.certificate,
    home,
    ownerOf: owner,
    verifier: (password) => Effect.sync(() => scramVerifier(Redacted.value(password))),
    ensure,
    endpoint,
    tokens,
    createToken,
    deleteToken,
    syncTokens,
    drain,
    resume,
    backup,
    restore,
    remove,
    held
  })
})

export const layer = (options: DatabaseNodeEmbeddedOptions) => Layer.effect(Database.DatabaseNode, make(options))

/**
 * `<SERVICE_DATA_DIR or .hostplane>/node/db`, clients told `SERVICE_NODE_DB_HOST` (default 127.0.0.1). The clusters
 * flush to disk as the server's own embedded PostgreSQL does (`SERVICE_PG_EMBEDDED_DURABLE`, false only for a
 * throwaway test server).
 */
export const layerConfig = Layer.unwrap(
  Effect.gen(function* () {
    const dataDir = yield* Config.String("SERVICE_DATA_DIR").pipe(Config.withDefault(".hostplane"))
    const host = yield* Config.String("SERVICE_NODE_DB_HOST").pipe(Config.withDefault("127.0.0.1"))
    const durable = yield* Config.Boolean("SERVICE_PG_EMBEDDED_DURABLE").pipe(Config.withDefault(true))
    return layer({ directory: Path.join(dataDir.trim() === "" ? ".hostplane" : dataDir, "node", "db"), host, durable })
  })
)
