import { Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { CliFailure, note, out } from "../Output.ts"
import { projectSession } from "../Root.ts"

/** Where dev keeps the folder's local add-on state (objects, sent mail): never deployed, as every dot entry. */
export const devStateDir = (folder: string) => Path.join(folder, ".hostplane", "dev")

/**
 * `hostplane dev [dir]`: the folder served locally by the node's own runtime and route rules, secrets from
 * `.dev.vars`, reloaded when the folder changes; Ctrl-C stops the server and its workerd. Add-ons declared in
 * `service.json` are present in `env`: `env.storage` keeps objects in `.hostplane/dev/storage`, `env.email` writes
 * messages to `.hostplane/dev/outbox`, `env.auth` resolves a dev sign-in, `env.db` is the linked project's database
 * with `--linked`, and `env.ai` rejects with `not_available_in_dev` (docs/cli.md).
 */
export const dev = Command.make(
  "dev",
  {
    dir: Argument.Directory("dir", { mustExist: true }).pipe(
      Argument.withDescription("The folder holding service.json, worker/, assets/ and .dev.vars"),
      Argument.withDefault(".")
    ),
    port: Flag.Int("port").pipe(
      Flag.withDescription("The local port to listen on (0 picks a free one)"),
      Flag.withDefault(8787)
    ),
    ip: Flag.String("ip").pipe(
      Flag.withDescription("The local address to listen on; another than loopback exposes the folder to the network"),
      Flag.withDefault("127.0.0.1")
    ),
    linked: Flag.Boolean("linked").pipe(
      Flag.withDescription(
        "Bind env.db to the database of the linked project (--org/--project or .hostplane.json), and send mail from its address"
      ),
      Flag.withDefault(false)
    )
  },
  Effect.fn("dev")(function* ({ dir, ip, port, linked }) {
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      return yield* new CliFailure({ code: "usage", message: `--port must be 0..65535, not ${port}` })
    }
    const folder = Path.resolve(dir)
    // The linked project's own connection (what `hostplane db connect` prints): queries run as its role. Its mail
    // address and storage quota, when it has them, are what the local outbox and store enforce.
    const linkedProject = linked
      ? yield* Effect.gen(function* () {
          const { api, params } = yield* projectSession
          const database = (yield* api.database.connect({ params })).body
          const email = yield* Effect.option(api.email.status({ params }))
          const storage = yield* Effect.option(api.storage.status({ params }))
          return {
            database,
            mailFrom: email._tag === "Some" && email.value.address !== "" ? email.value.address : undefined,
            storageQuotaBytes: storage._tag === "Some" ? storage.value.quotaBytes : undefined
          }
        })
      : undefined
    // The runtime's code (workerd's supervisor, the router's sources) loads only for `dev`.
    const { DevProblem, findWorkerd, startDevServer } = yield* Effect.promise(() => import("@hostplane/node/dev/index"))
    const problem = (error: unknown) =>
      error instanceof DevProblem
        ? new CliFailure({ code: "dev_failed", message: error.message })
        : new CliFailure({ code: "dev_failed", message: String(error) })
    const binary = yield* Effect.try({ try: () => findWorkerd(folder), catch: problem })
    const state = devStateDir(folder)
    const { make: diskStore } = yield* Effect.promise(
      () => import("@hostplane/adapters-providers/storage/ObjectStoreDisk")
    )
    const objects = yield* diskStore(Path.join(state, "storage")).pipe(
      Effect.mapError((error) => new CliFailure({ code: "dev_failed", message: error.message }))
    )
    // Local objects and mail are never a commit's: git skips the folder without the project's .gitignore changing.
    yield* Effect.try({
      try: () => Fs.writeFileSync(Path.join(state, ".gitignore"), "*\n", { flag: "wx" }),
      catch: (error) => error
    }).pipe(Effect.ignore)
    const server = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () =>
          startDevServer({
            dir: folder,
            host: ip,
            port,
            binary,
            database: linkedProject?.database,
            objects,
            storageQuotaBytes: linkedProject?.storageQuotaBytes,
            outbox: Path.join(state, "outbox"),
            mailFrom: linkedProject?.mailFrom,
            print: (line, isProblem) => void (isProblem === true ? process.stderr : process.stdout).write(`${line}\n`)
          }),
        catch: problem
      }),
      (running) => Effect.promise(() => running.stop())
    )
    yield* out(`serving ${folder} on ${server.url}`)
    yield* note("reloads when the folder changes; Ctrl-C stops")
    return yield* Effect.never
  }, Effect.scoped)
).pipe(
  Command.withDescription(
    "Serve a folder locally under the node's runtime: assets, worker, .dev.vars secrets; reloads when it changes"
  )
)
