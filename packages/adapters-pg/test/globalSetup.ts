import { Effect, Exit, Layer, Redacted, Scope } from "effect"
import * as Fs from "node:fs/promises"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"

/** `TestDatabase.setupVariable`, spelled out: importing it would load the PostgreSQL code this file defers. */
const setupVariable = "HOSTPLANE_TEST_PG_SETUP"

/** `EmbeddedPostgres.initdbCacheVariable`, spelled out for the same reason. */
const initdbCacheVariable = "HOSTPLANE_TEST_PG_INITDB_CACHE"

/** Where the setup answers with `serverCluster`'s folder instead of the shared server (`ServerProcess.ts` asks). */
const serverClusterPath = "/server-cluster"

/**
 * Serves the run's test PostgreSQL to the test workers, started on the first ask: one throwaway embedded server under
 * a fresh temp directory (unless `TEST_DATABASE_URL` names a server), so concurrent runs in one tree never share a
 * cluster, with a template database migrated on it once. `TestDatabase.layer` asks for it (through the env var
 * `setupVariable`) and copies the template per file. A run of memory-only files starts no PostgreSQL and loads none
 * of its code.
 *
 * It also serves, on `serverClusterPath`, a stopped embedded cluster as a standalone server's first start leaves it
 * (initdb without fsync, hostplane's migrations applied in its schema): test servers on their own embedded PostgreSQL
 * start on a copy of it (`ServerProcess.startServer`) instead of running initdb and every migration each. And every
 * throwaway cluster of the run (the workers' and their servers', `durable: false`) copies the run's first initdb
 * instead of running its own, through `initdbCacheVariable`.
 */
export default async function setup() {
  const runTemp = await ramTemp()
  // The binaries' bundles that `npm start` and `npm run start:node` run (`packages/server/scripts/bundle.mjs`), built
  // here once when a source is newer than them, so the test servers starting at once do not each build them again.
  const bundles = Path.join(import.meta.dirname, "../../server/scripts/bundle.mjs")
  const { fresh } = (await import(pathToFileURL(bundles).href)) as { fresh: (name: string) => Promise<string> }
  await fresh("server")
  await fresh("node")
  const psqlDirectory = await directPsql()
  const scope = Scope.makeUnsafe()
  let directory: string | undefined
  let clusterDirectory: string | undefined
  // Read by the workers and the servers they start, which inherit this process's environment.
  const initdbCache = await Fs.mkdtemp(Path.join(Os.tmpdir(), "hostplane-test-initdb-"))
  process.env[initdbCacheVariable] = initdbCache
  const start = async () => {
    // Relative imports, loaded only when asked: vitest loads this file outside the "@hostplane/source" condition.
    const EmbeddedPostgres = await import("../src/embedded/EmbeddedPostgres.ts")
    const TestDatabase = await import("../src/testing/TestDatabase.ts")
    let url = process.env.TEST_DATABASE_URL ?? ""
    if (url === "") {
      directory = await Fs.mkdtemp(Path.join(Os.tmpdir(), "hostplane-test-pg-"))
      await Fs.chmod(directory, 0o755)
      const server = await Effect.runPromise(
        EmbeddedPostgres.start({ directory, durable: false, maxConnections: 500 }).pipe(Scope.provide(scope))
      )
      url = Redacted.value(server.url)
    }
    const template = await Effect.runPromise(TestDatabase.template(Redacted.make(url)).pipe(Scope.provide(scope)))
    return { url, template }
  }
  const serverCluster = async () => {
    const EmbeddedPostgres = await import("../src/embedded/EmbeddedPostgres.ts")
    const PgDatabase = await import("../src/PgDatabase.ts")
    clusterDirectory = await Fs.mkdtemp(Path.join(Os.tmpdir(), "hostplane-test-server-pg-"))
    await Fs.chmod(clusterDirectory, 0o755)
    const pg = Path.join(clusterDirectory, "pg")
    // What `PgDatabase.layerConfig` does on a fresh data folder with SERVICE_PG_EMBEDDED_DURABLE=false, then a clean stop.
    await Effect.runPromise(
      Effect.gen(function* () {
        const server = yield* EmbeddedPostgres.start({ directory: pg, durable: false })
        yield* Layer.build(PgDatabase.layer(server.url))
      }).pipe(Effect.scoped)
    )
    return { directory: pg }
  }
  let started: ReturnType<typeof start> | undefined
  let cluster: ReturnType<typeof serverCluster> | undefined
  const asks = Http.createServer((request, response) => {
    const answer: Promise<unknown> =
      request.url === serverClusterPath ? (cluster ??= serverCluster()) : (started ??= start())
    answer.then(
      (server) => response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(server)),
      (error: unknown) =>
        response
          .writeHead(500, { "content-type": "text/plain" })
          .end(`the test PostgreSQL did not start: ${error instanceof Error ? error.stack : String(error)}`)
    )
  })
  // A start on a loaded machine takes minutes: the ask waits as long as a hook may.
  asks.requestTimeout = 0
  asks.headersTimeout = 0
  await new Promise<void>((resolve) => asks.listen(0, "127.0.0.1", resolve))
  process.env[setupVariable] = `http://127.0.0.1:${(asks.address() as AddressInfo).port}/`
  return async () => {
    asks.closeAllConnections()
    await new Promise((resolve) => asks.close(resolve))
    await started?.catch(() => undefined)
    await cluster?.catch(() => undefined)
    await Effect.runPromise(Scope.close(scope, Exit.void))
    if (directory !== undefined) await Fs.rm(directory, { recursive: true, force: true })
    if (clusterDirectory !== undefined) await Fs.rm(clusterDirectory, { recursive: true, force: true })
    await Fs.rm(initdbCache, { recursive: true, force: true })
    if (psqlDirectory !== undefined) await Fs.rm(psqlDirectory, { recursive: true, force: true })
    if (runTemp !== undefined) await Fs.rm(runTemp, { recursive: true, force: true })
  }
}

const ramTempParent = "/dev/shm"
const ramTempPrefix = "hostplane-test-run-"

/**
 * Makes the run's TMPDIR (which the workers and every process they start inherit) a folder on the RAM file system
 * `/dev/shm` when it is a tmpfs that allows executables and has room, unless TMPDIR is set already. The run makes and
 * removes tens of thousands of files in temp folders (clusters and their copies, a database per file, repositories),
 * and on an ext4 without a journal each new file's inode skips every one freed in its group in the last minutes
 * (ext4's `recently_deleted`): up to 0.6 ms of system time a file there while the run churns, a few microseconds on
 * tmpfs. The folder goes at the end with whatever is left in it; a killed run's is removed by the next run. Its path.
 */
const ramTemp = async () => {
  if ((process.env.TMPDIR ?? "") !== "") return undefined
  const mounts = await Fs.readFile("/proc/mounts", "utf8").catch(() => "")
  const mount = mounts
    .split("\n")
    .find((line) => line.split(" ")[1] === ramTempParent)
    ?.split(" ")
  if (mount === undefined || mount[2] !== "tmpfs" || (mount[3] ?? "").split(",").includes("noexec")) return undefined
  const space = await Fs.statfs(ramTempParent).catch(() => undefined)
  if (space === undefined || space.bavail * space.bsize < 8 * 1024 ** 3) return undefined
  for (const name of await Fs.readdir(ramTempParent).catch(() => [] as Array<string>)) {
    if (!name.startsWith(ramTempPrefix)) continue
    const owner = Number.parseInt(await Fs.readFile(Path.join(ramTempParent, name, "pid"), "utf8").catch(() => ""), 10)
    // No pid yet: a run that is making its folder right now.
    if (!Number.isInteger(owner) || owner <= 0 || running(owner)) continue
    await Fs.rm(Path.join(ramTempParent, name), { recursive: true, force: true }).catch(() => undefined)
  }
  const directory = await Fs.mkdtemp(Path.join(ramTempParent, ramTempPrefix))
  await Fs.writeFile(Path.join(directory, "pid"), String(process.pid))
  // Like /tmp: the servers' PostgreSQL runs as the `postgres` user when the run is root's.
  await Fs.chmod(directory, 0o1777)
  process.env.TMPDIR = directory
  return directory
}

const running = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/**
 * Puts the newest installed PostgreSQL's own `psql` first on `PATH`, which the workers and the servers they start
 * inherit, when the `psql` on `PATH` is Debian's `pg_wrapper`: that Perl script only picks a version and runs the same
 * binary, at about 0.1 CPU-s a call against 0.03 for the binary, and the tests run psql many times. Only `psql` is put
 * there (a folder holding one link), so no other PostgreSQL program found on `PATH` changes. Its folder, to remove.
 */
const directPsql = async () => {
  const paths = (process.env.PATH ?? "").split(Path.delimiter).filter((entry) => entry !== "")
  const executable = (file: string) =>
    Fs.access(file, Fs.constants.X_OK).then(
      () => true,
      () => false
    )
  const onPath = paths.map((entry) => Path.join(entry, "psql"))
  const found = (await Promise.all(onPath.map(executable))).indexOf(true)
  if (found === -1 || Path.basename(await Fs.realpath(onPath[found]!)) !== "pg_wrapper") return undefined
  const versions = (await Fs.readdir("/usr/lib/postgresql").catch(() => [] as Array<string>))
    .filter((version) => /^\d+$/.test(version))
    .sort((a, b) => Number(b) - Number(a))
  for (const version of versions) {
    const binary = Path.join("/usr/lib/postgresql", version, "bin", "psql")
    if (!(await executable(binary))) continue
    const directory = await Fs.mkdtemp(Path.join(Os.tmpdir(), "hostplane-test-psql-"))
    await Fs.symlink(binary, Path.join(directory, "psql"))
    process.env.PATH = [directory, ...paths].join(Path.delimiter)
    return directory
  }
  return undefined
}
