import { type Database, type Deployments, Email, type Storage } from "@hostplane/core"
import { Result } from "effect"
import { createHash, randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { WorkerUser } from "../bindings/Auth.ts"
import { servedHandlers } from "../bindings/Bindings.ts"
import { makeDbBinding } from "../bindings/Db.ts"
import { BindingFailure } from "../bindings/Failure.ts"
import { rawMessageOf } from "../bindings/Mail.ts"
import { makeStorageBinding, servedStorage } from "../bindings/Storage.ts"
import type { ServedBinding } from "../bindings/WorkerBinding.ts"

/** The dev server's one project: secrets and bindings are the folder's own, never a deployed project's. */
export const devProject = "dev"

/** Where the folder's objects live in the dev store: one project, so one prefix. */
const devPrefix = "dev/"

/** The From of mail sent under dev when no linked project gives its own address. */
export const defaultDevFrom = "dev@localhost"

/** The free plan's storage quota (decisions.md part 3): what dev enforces when no linked project gives its own. */
export const defaultDevQuotaBytes = 1024 * 1024 * 1024

export interface DevAddonOptions {
  /**
   * Where `env.storage` keeps the folder's objects (the CLI: a disk store in `.hostplane/dev/storage`), with the
   * node's own binding over it: the same R2 subset, key rules and quota. Without it every call rejects.
   */
  readonly objects?: Storage.ObjectStore["Service"] | undefined
  /** The quota `env.storage` enforces; the free plan's by default. */
  readonly storageQuotaBytes?: number | undefined
  /** The folder `env.email` writes each message to as `<id>.eml`. Without it every call rejects. */
  readonly outbox?: string | undefined
  /** The project's address: the only `From` a message may carry (`dev@localhost` by default). */
  readonly mailFrom?: string | undefined
  /** The linked project's database: `env.db` queries it as the project role. Without it every call rejects. */
  readonly database?: Database.DatabaseConnect | undefined
  /** One line of the dev server's own output: a sent message. */
  readonly print: (line: string) => void
}

/** Why an add-on rejects every call under dev, by its name in `env`. */
const unavailable: Record<string, string> = {
  db: "needs the linked project's database: run hostplane dev --linked (the database granted)",
  storage: "has no local store in this dev server",
  email: "has no local outbox in this dev server",
  ai: "runs only in a deployed project: the AI gateway takes the project's key, which only the node holds (test AI code with hostplane deploy and hostplane logs --follow)"
}

/** A binding whose every call rejects with `not_available_in_dev`, saying why. */
const refusing = (
  name: string,
  methods: ReadonlyArray<string>,
  raw: ReadonlyArray<string> = []
): ServedBinding<any> => {
  const refuse = (method: string) => () => {
    throw new BindingFailure("not_available_in_dev", `env.${name}.${method}() ${unavailable[name]}`)
  }
  return {
    calls: Object.fromEntries(methods.map((method) => [method, refuse(method)])),
    raw: Object.fromEntries(raw.map((method) => [method, refuse(method)]))
  }
}

/** The cookie of a dev sign-in through `/__service/auth/login/<provider>`: the user it names, readable by no worker. */
export const devAuthCookie = "hostplane_dev_auth"

/** The dev user a sign-in names, by email and provider. */
export const devUserOf = (email: string, provider: string): WorkerUser => ({
  id: `dev_${createHash("sha256").update(email.toLowerCase()).digest("hex").slice(0, 16)}`,
  email,
  name: email.slice(0, email.indexOf("@")),
  provider
})

/** The user of a dev sign-in cookie's value, or undefined for one this dev server never set. */
export const devUserOfCookie = (value: string | undefined): WorkerUser | undefined => {
  if (value === undefined || value === "") return undefined
  try {
    const { email, provider } = JSON.parse(Buffer.from(value, "base64url").toString("utf8")) as Record<string, unknown>
    if (typeof email !== "string" || typeof provider !== "string" || !email.includes("@")) return undefined
    return devUserOf(email, provider)
  } catch {
    return undefined
  }
}

export const devCookieValue = (email: string, provider: string) =>
  Buffer.from(JSON.stringify({ email, provider }), "utf8").toString("base64url")

/** What `env` gets for the add-ons `service.json` declares: each present, so code that checks for them runs. */
export const devFlags = (
  manifest: Deployments.Manifest,
  database: Database.DatabaseConnect | undefined
): Record<string, unknown> => ({
  ...(manifest.database === true ? { db: { connectionString: database?.url ?? "" } } : {}),
  ...(manifest.storage === true ? { storage: true } : {}),
  ...(manifest.email === true ? { email: true } : {}),
  ...(manifest.ai === true ? { ai: true } : {}),
  ...(manifest.auth === true ? { auth: true } : {})
})

const safeName = /[^A-Za-z0-9._-]/g

/**
 * The add-ons under `hostplane dev`, on the node's own bindings where they can run locally: `env.storage` is the node's
 * binding over a local store, `env.email` builds the message as the node does, checks its `From` as the relay does and
 * writes it to the outbox, `env.db` is the linked project's database, `env.auth` resolves the dev sign-in of the
 * request, and `env.ai` rejects (the gateway takes a key only the node holds).
 */
export const makeDevBindings = (options: DevAddonOptions) => {
  const database = options.database
  const db = database === undefined ? undefined : makeDbBinding({ authority: undefined, queryTimeoutMs: 30_000 })
  const storage =
    options.objects === undefined
      ? undefined
      : makeStorageBinding({ objects: options.objects, report: async () => {}, reportEveryMs: 60_000 })
  const storageValue: Storage.StorageBinding = {
    prefix: devPrefix,
    quotaBytes: options.storageQuotaBytes ?? defaultDevQuotaBytes
  }
  const from = options.mailFrom ?? defaultDevFrom
  const outbox = options.outbox

  /** The relay's checks (size, headers, From), then the message as a file in the outbox instead of a transport. */
  const send = (folder: string, message: unknown) => {
    const bytes = rawMessageOf(message, from)
    if (bytes.byteLength > Email.maxRelayBytes) {
      throw new BindingFailure("payload_too_large", `a relayed message is at most ${Email.maxRelayBytes} bytes`)
    }
    const read = Email.Rfc822.readRelayed(bytes)
    if (Result.isFailure(read)) {
      throw new BindingFailure("bad_request", `not a message the relay can send: ${read.failure}`)
    }
    const headers = read.success
    if (headers.fromAddress !== from.toLowerCase()) {
      throw new BindingFailure("from_not_allowed", `From must be the project's address ${from}`)
    }
    const id = `mail_dev_${randomBytes(6).toString("hex")}`
    const name = `${new Date().toISOString().replace(/[:.]/g, "-")}-${id}.eml`.replace(safeName, "_")
    Fs.mkdirSync(folder, { recursive: true, mode: 0o700 })
    const file = Path.join(folder, name)
    Fs.writeFileSync(`${file}.tmp`, bytes, { mode: 0o600 })
    Fs.renameSync(`${file}.tmp`, file)
    options.print(
      `✉ mail  ${headers.fromAddress} → ${headers.recipients.join(", ")}  ${JSON.stringify(headers.subject)}  ${file}`
    )
    return { id, messageId: headers.messageId ?? `${id}@${from.slice(from.indexOf("@") + 1)}` }
  }

  // Each add-on as the node serves it (`ServedBinding`), on the folder's local values instead of a grant.
  const served: Record<string, ServedBinding<any>> = {
    db:
      db === undefined || database === undefined
        ? refusing("db", ["query"])
        : { calls: { query: (call, args) => db.query(call.projectId, database, args) }, close: db.close },
    storage:
      storage === undefined
        ? refusing("storage", ["head", "delete", "list"], ["put", "get"])
        : servedStorage(storage, () => storageValue),
    email:
      outbox === undefined
        ? refusing("email", ["send"])
        : { calls: { send: async (_call, args) => ({ value: send(outbox, args[0]) }) } },
    ai: refusing("ai", ["chat"]),
    auth: {
      calls: {
        user: async (_call, args) => ({
          value: devUserOfCookie(typeof args[0] === "string" ? args[0] : undefined) ?? null
        })
      }
    }
  }
  // No dev project is in any node state: a method reads the folder's values, never `call.granted()`.
  const { handler, rawHandler } = servedHandlers(
    (name) => (Object.hasOwn(served, name) ? served[name] : undefined),
    () => undefined
  )

  const close = async () => {
    await Promise.all(Object.values(served).map((one) => one.close?.()))
  }

  return { handler, rawHandler, close }
}
