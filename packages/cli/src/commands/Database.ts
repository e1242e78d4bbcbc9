import { Effect } from "effect"
import { Argument, Command, Flag, Prompt } from "effect/cli"
import { withInterrupts } from "../Interrupts.ts"
import { CliFailure, note, show, table } from "../Output.ts"
import { projectSession, type Session } from "../Root.ts"

type Params = { readonly orgSlug: string; readonly projectName: string }

/** Spec part 8: the CLI polls a database operation every 2 seconds. */
const pollEvery = 2_000

/**
 * Follows a restore or delete until it ends, printing each phase. Ctrl-C asks whether to abort it (only before
 * `committing`; the server answers 409 `not_abortable` after); without a terminal to ask on, Ctrl-C stops the CLI
 * and the operation goes on.
 */
const follow = (api: Session["api"], params: Params, opId: string) =>
  Effect.gen(function* () {
    const signal = { interrupted: false }
    const body = Effect.gen(function* () {
      let phase = ""
      for (;;) {
        const operation = yield* api.database.operation({ params: { ...params, opId } })
        if (operation.phase !== phase) {
          phase = operation.phase
          yield* note(`${operation.kind} ${opId}: ${phase}`)
        }
        if (operation.terminalCode !== null) return operation
        for (let waited = 0; waited < pollEvery && !signal.interrupted; waited += 100) yield* Effect.sleep(100)
        if (!signal.interrupted) continue
        signal.interrupted = false
        if (!process.stdin.isTTY) return yield* Effect.interrupt
        const abort = yield* Prompt.run(
          Prompt.Confirm({ message: `Abort ${operation.kind} ${opId} (now in ${phase})?`, initial: false })
        ).pipe(Effect.orElseSucceed(() => false))
        if (!abort) continue
        yield* api.database.abort({ params: { ...params, opId } }).pipe(
          Effect.tap(() => note("abort asked: it undoes the draining and keeps any generation it sealed")),
          Effect.catchTag("NotAbortable", (error) => note(`not aborted: ${error.message}`))
        )
      }
    })
    return yield* withInterrupts(() => void (signal.interrupted = true))(body)
  })

const ended = (operation: { readonly terminalCode: string | null; readonly kind: string; readonly id: string }) =>
  operation.terminalCode === "done"
    ? Effect.void
    : Effect.fail(
        new CliFailure({
          code: operation.terminalCode ?? "failed",
          message: `${operation.kind} ${operation.id} ended ${operation.terminalCode}`
        })
      )

const connect = Command.make(
  "connect",
  {},
  Effect.fn("db.connect")(function* () {
    const { flags, api, params } = yield* projectSession
    const { body: details } = yield* api.database.connect({ params })
    yield* show(flags.json, details, () => [details.url])
  })
).pipe(Command.withDescription("Print the connection URL (with the password) of the project's database"))

const tokensList = Command.make(
  "list",
  {},
  Effect.fn("db.tokens.list")(function* () {
    const { flags, api, params } = yield* projectSession
    const tokens = yield* api.database.tokens({ params })
    yield* show(flags.json, tokens, () =>
      table([["USER", "CREATED"], ...tokens.items.map((t) => [t.user, t.createdAt])])
    )
  })
).pipe(Command.withDescription("List database tokens (no passwords)"))

const tokensCreate = Command.make(
  "create",
  {},
  Effect.fn("db.tokens.create")(function* () {
    const { flags, api, params } = yield* projectSession
    const { body: token } = yield* api.database.createToken({ params, payload: {} })
    yield* note("the password is shown once")
    yield* show(flags.json, token, () => [`user ${token.user}`, `password ${token.password}`])
  })
).pipe(Command.withDescription("Create a database token (its password is shown once)"))

const tokensDelete = Command.make(
  "delete",
  { user: Argument.String("user") },
  Effect.fn("db.tokens.delete")(function* ({ user }) {
    const { flags, api, params } = yield* projectSession
    yield* api.database.deleteToken({ params: { ...params, tokenUser: user } })
    yield* show(flags.json, { deleted: user }, () => [`deleted ${user}`])
  })
).pipe(Command.withDescription("Delete a database token: later connections with it are refused"))

const tokens = Command.make("tokens").pipe(
  Command.withDescription("Database tokens"),
  Command.withSubcommands([tokensList, tokensCreate, tokensDelete])
)

const exportImage = Command.make(
  "export",
  {},
  Effect.fn("db.export")(function* () {
    const { flags, api, params } = yield* projectSession
    yield* note("exporting (the answer waits for the dump)...")
    const image = yield* api.database.export({ params })
    yield* show(flags.json, image, () => [image.key])
  })
).pipe(Command.withDescription("Make a diagnostic image of the database (not a backup)"))

const generations = Command.make(
  "generations",
  {},
  Effect.fn("db.generations")(function* () {
    const { flags, api, params } = yield* projectSession
    const list = yield* api.database.generations({ params })
    yield* show(flags.json, list, () =>
      table([
        ["EPOCH", "SEQ", "BYTES", "CREATED", "CHECKED"],
        ...list.items.map((g) => [String(g.epoch), String(g.seq), String(g.bytes), g.createdAt, g.lastCheckedAt ?? ""])
      ])
    )
  })
).pipe(Command.withDescription("List backup generations, newest first"))

const restore = Command.make(
  "restore",
  {
    epoch: Flag.Int("epoch").pipe(Flag.withDescription("The generation's epoch (see `db generations`)")),
    seq: Flag.Int("seq").pipe(Flag.withDescription("The generation's seq"))
  },
  Effect.fn("db.restore")(function* ({ epoch, seq }) {
    const { flags, api, params } = yield* projectSession
    const started = yield* api.database.restore({ params, payload: { epoch, seq } as never })
    yield* note(`restore started: operation ${started.operationId} (Ctrl-C asks whether to abort it)`)
    const operation = yield* follow(api, params, started.operationId)
    yield* show(flags.json, operation, () => [`restore ${operation.id}: ${operation.terminalCode}`])
    yield* ended(operation)
  })
).pipe(Command.withDescription("Restore a generation (writes since then are lost); follows the operation every 2 s"))

const remove = Command.make(
  "delete",
  { confirm: Flag.String("confirm").pipe(Flag.withDescription("The project's name, to confirm")) },
  Effect.fn("db.delete")(function* ({ confirm }) {
    const { flags, api, params } = yield* projectSession
    const started = yield* api.database.remove({
      params,
      payload: { confirm } as never
    })
    yield* note(`delete started: operation ${started.operationId} (Ctrl-C asks whether to abort it)`)
    const operation = yield* follow(api, params, started.operationId)
    yield* show(flags.json, operation, () => [`delete ${operation.id}: ${operation.terminalCode}`])
    yield* ended(operation)
  })
).pipe(Command.withDescription("Delete the database (--confirm <project>); follows the operation every 2 s"))

export const database = Command.make("db").pipe(
  Command.withDescription("The project's database add-on (spec 4.6)"),
  Command.withSubcommands([connect, tokens, exportImage, generations, restore, remove])
)
