import { Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import * as Path from "node:path"
import { CliFailure, note, out } from "../Output.ts"

/**
 * `hostplane dev [dir]`: the folder served locally by the node's own runtime and route rules, secrets from
 * `.dev.vars`, reloaded when the folder changes; Ctrl-C stops the server and its workerd. Add-ons declared in
 * `service.json` are present in `env` and reject every call with `not_available_in_dev` (docs/cli.md).
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
    )
  },
  Effect.fn("dev")(function* ({ dir, ip, port }) {
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      return yield* new CliFailure({ code: "usage", message: `--port must be 0..65535, not ${port}` })
    }
    const folder = Path.resolve(dir)
    // The runtime's code (workerd's supervisor, the router's sources) loads only for `dev`.
    const { DevProblem, findWorkerd, startDevServer } = yield* Effect.promise(() => import("@hostplane/node/dev/index"))
    const problem = (error: unknown) =>
      error instanceof DevProblem
        ? new CliFailure({ code: "dev_failed", message: error.message })
        : new CliFailure({ code: "dev_failed", message: String(error) })
    const binary = yield* Effect.try({ try: () => findWorkerd(folder), catch: problem })
    const server = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () =>
          startDevServer({
            dir: folder,
            host: ip,
            port,
            binary,
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
)
