import { Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import * as Fs from "node:fs/promises"
import { CliFailure, note, show, table } from "../Output.ts"
import { root, session } from "../Root.ts"
import { readStdin } from "./Input.ts"

/**
 * The one item of a list that `ref` names: its id, else its name (or another label) when exactly one item has it,
 * so a user types what the table shows. Two items of the same name ask for the id.
 */
export const pick = <A extends { readonly id: string }>(
  items: ReadonlyArray<A>,
  ref: string,
  what: string,
  labels: (item: A) => ReadonlyArray<string | null>
): Effect.Effect<A, CliFailure> => {
  const byId = items.find((item) => item.id === ref)
  if (byId !== undefined) return Effect.succeed(byId)
  const named = items.filter((item) => labels(item).includes(ref))
  if (named.length === 1) return Effect.succeed(named[0]!)
  return Effect.fail(
    named.length === 0
      ? new CliFailure({ code: "not_found", message: `no ${what} named ${ref}` })
      : new CliFailure({
          code: "ambiguous",
          message: `${named.length} ${what}s are named ${ref}: give the id (${named.map((item) => item.id).join(", ")})`
        })
  )
}

const when = (time: string | null) => time ?? ""

// tokens ------------------------------------------------------------------------------------------------------

const tokensList = Command.make(
  "list",
  {
    all: Flag.Boolean("all").pipe(Flag.withDescription("Include revoked tokens"), Flag.withDefault(false))
  },
  Effect.fn("tokens.list")(function* ({ all }) {
    const flags = yield* root
    const { api } = yield* session(flags)
    const list = yield* api.credentials.listTokens()
    const items = all ? list.items : list.items.filter((token) => token.revokedAt === null)
    yield* show(flags.json, { items }, () =>
      table([
        ["NAME", "ID", "CREATED", "EXPIRES", "LAST USED", ...(all ? ["REVOKED"] : [])],
        ...items.map((token) => [
          token.name,
          token.id,
          token.createdAt,
          token.expiresAt ?? "never",
          when(token.lastUsedAt),
          ...(all ? [when(token.revokedAt)] : [])
        ])
      ])
    )
  })
).pipe(Command.withDescription("List your personal access tokens (never the tokens themselves)"))

const tokensCreate = Command.make(
  "create",
  {
    name: Argument.String("name").pipe(Argument.withDescription("What the token is for (shown in the list)")),
    expires: Flag.String("expires").pipe(
      Flag.withDescription("When it stops working: an RFC 3339 time, or a number of days (`30d`); default never"),
      Flag.optional
    )
  },
  Effect.fn("tokens.create")(function* ({ name, expires }) {
    const flags = yield* root
    const { api } = yield* session(flags)
    const expiresAt = Option.isNone(expires) ? undefined : yield* expiryOf(expires.value)
    const { body: created } = yield* api.credentials.createToken({
      payload: { name, ...(expiresAt === undefined ? {} : { expiresAt }) } as never
    })
    yield* note("the token is shown once: store it now (git's password, or HOSTPLANE_TOKEN)")
    yield* show(flags.json, created, () => [created.token])
  })
).pipe(
  Command.withDescription("Create a personal access token (for git over HTTPS and for CI); it is printed once"),
  Command.withExamples([{ command: "hostplane tokens create ci --expires 90d", description: "A token for CI" }])
)

const expiryOf = (text: string): Effect.Effect<string, CliFailure> => {
  const days = /^(\d+)d$/u.exec(text)
  if (days !== null) return Effect.succeed(new Date(Date.now() + Number(days[1]) * 86_400_000).toISOString())
  return Number.isNaN(Date.parse(text))
    ? Effect.fail(
        new CliFailure({ code: "usage", message: `--expires ${text}: give an RFC 3339 time or a number of days (30d)` })
      )
    : Effect.succeed(text)
}

const tokensRevoke = Command.make(
  "revoke",
  { token: Argument.String("token").pipe(Argument.withDescription("The token's name or id")) },
  Effect.fn("tokens.revoke")(function* ({ token }) {
    const flags = yield* root
    const { api } = yield* session(flags)
    const list = yield* api.credentials.listTokens()
    const found = yield* pick(
      list.items.filter((item) => item.revokedAt === null),
      token,
      "token",
      (item) => [item.name]
    )
    yield* api.credentials.revokeToken({ params: { tokenId: found.id } })
    yield* show(flags.json, { revoked: found.id, name: found.name }, () => [`revoked ${found.name} (${found.id})`])
  })
).pipe(Command.withDescription("Revoke a personal access token: it stops working at once"))

export const tokens = Command.make("tokens").pipe(
  Command.withDescription("Your personal access tokens (git over HTTPS, CI)"),
  Command.withSubcommands([tokensList, tokensCreate, tokensRevoke])
)

// keys --------------------------------------------------------------------------------------------------------

const keysList = Command.make(
  "list",
  {},
  Effect.fn("keys.list")(function* () {
    const flags = yield* root
    const { api } = yield* session(flags)
    const list = yield* api.credentials.listKeys()
    yield* show(flags.json, list, () =>
      table([
        ["TITLE", "ID", "TYPE", "FINGERPRINT", "ADDED"],
        ...list.items.map((key) => [key.title, key.id, key.type, key.fingerprint, key.createdAt])
      ])
    )
  })
).pipe(Command.withDescription("List your SSH keys"))

const keysAdd = Command.make(
  "add",
  {
    file: Argument.String("file").pipe(
      Argument.withDescription("The public key file (`~/.ssh/id_ed25519.pub`), or - for stdin")
    ),
    title: Flag.String("title").pipe(Flag.withDescription("A title (default: the key's comment)"), Flag.optional)
  },
  Effect.fn("keys.add")(function* ({ file, title }) {
    const flags = yield* root
    const publicKey =
      file === "-"
        ? yield* readStdin
        : yield* Effect.tryPromise({
            try: () => Fs.readFile(file, "utf8"),
            catch: (cause) =>
              new CliFailure({
                code: "file_unreadable",
                message: `cannot read ${file}: ${(cause as NodeJS.ErrnoException).code ?? String(cause)}`
              })
          })
    if (/PRIVATE KEY/u.test(publicKey)) {
      return yield* new CliFailure({
        code: "private_key",
        message: `${file === "-" ? "stdin" : file} holds a private key: give the public one (the .pub file)`
      })
    }
    const { api } = yield* session(flags)
    const key = yield* api.credentials.addKey({
      payload: { publicKey: publicKey.trim(), ...(Option.isSome(title) ? { title: title.value } : {}) } as never
    })
    yield* show(flags.json, key, () => [`added ${key.type} key ${key.title} (${key.fingerprint}, ${key.id})`])
  })
).pipe(
  Command.withDescription("Add an SSH public key (git over SSH) from a file or stdin"),
  Command.withExamples([
    { command: "hostplane keys add ~/.ssh/id_ed25519.pub", description: "From a file" },
    { command: "ssh-add -L | head -1 | hostplane keys add -", description: "From stdin" }
  ])
)

const keysRemove = Command.make(
  "remove",
  { key: Argument.String("key").pipe(Argument.withDescription("The key's title, fingerprint or id")) },
  Effect.fn("keys.remove")(function* ({ key }) {
    const flags = yield* root
    const { api } = yield* session(flags)
    const list = yield* api.credentials.listKeys()
    const found = yield* pick(list.items, key, "key", (item) => [item.title, item.fingerprint])
    yield* api.credentials.removeKey({ params: { keyId: found.id } })
    yield* show(flags.json, { removed: found.id, title: found.title }, () => [`removed ${found.title} (${found.id})`])
  })
).pipe(Command.withDescription("Remove an SSH key"))

export const keys = Command.make("keys").pipe(
  Command.withDescription("Your SSH keys (git over SSH)"),
  Command.withSubcommands([keysList, keysAdd, keysRemove])
)
