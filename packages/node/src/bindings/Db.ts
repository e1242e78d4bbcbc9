import { Database } from "@hostplane/core"
import { Context, Effect } from "effect"
import pg from "pg"
import { BindingFailure, type BindingAnswer } from "./Failure.ts"
import { workerBinding } from "./WorkerBinding.ts"

/** Connections a project's pool holds at most: a worker's queries share them. */
const poolSize = 5

/** The longest statement text a worker may send. */
const maxTextBytes = 1024 * 1024

/** The most parameters one statement takes (PostgreSQL's own limit). */
const maxParams = 65_535

/** The largest result a query answers with, as JSON: larger ones reject instead of filling the node's memory. */
const maxResultBytes = 32 * 1024 * 1024

/**
 * `timestamp` and `timestamptz` as RFC 3339 (decisions.md part 13), with PostgreSQL's own precision: the session runs
 * in UTC, so a `timestamptz` prints `+00`; a `timestamp` (no zone) is read as UTC. `infinity` and BC dates stay as
 * PostgreSQL prints them.
 */
export const rfc3339 = (text: string): string => {
  const match = /^(\d{4,}-\d\d-\d\d) (\d\d:\d\d:\d\d(?:\.\d+)?)(?:([+-])(\d\d)(?::?(\d\d))?(?::?(\d\d))?)?$/.exec(text)
  if (match === null) return text
  const [, date, time, sign, hours, minutes = "00", seconds] = match
  if (sign === undefined) return `${date}T${time}Z`
  // An offset with seconds (historic local times) has no RFC 3339 form: the instant in UTC instead.
  if (seconds !== undefined) {
    const offset = (Number(hours) * 3600 + Number(minutes) * 60 + Number(seconds)) * 1000
    return new Date(Date.parse(`${date}T${time}Z`) - (sign === "-" ? -offset : offset)).toISOString()
  }
  return `${date}T${time}${sign}${hours}:${minutes}`
}

const identity = (text: string) => text

/**
 * Part 13's type mapping on top of node-postgres's: `int2`/`int4`/`float4`/`float8` numbers, `int8`/`numeric`
 * strings, `bool` booleans, `json`/`jsonb` parsed (node-postgres's defaults); timestamps RFC 3339 strings; dates,
 * intervals and `bytea` as PostgreSQL prints them (a string, never an object that JSON would mangle).
 */
const parsers: Record<number, (text: string) => unknown> = {
  1114: rfc3339,
  1184: rfc3339,
  1082: identity,
  1186: identity,
  17: identity
}

const types = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    parsers[oid] ?? pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser
}

const utf8Length = (text: string) => Buffer.byteLength(text, "utf8")

/** A PostgreSQL error's SQLSTATE: five characters of digits and capitals. */
const sqlstate = (code: unknown): string | undefined =>
  typeof code === "string" && /^[0-9A-Z]{5}$/.test(code) ? code : undefined

interface Held {
  readonly url: string
  /** The authority the pool verifies with. */
  readonly authority: string | undefined
  readonly pool: pg.Pool
}

/**
 * How a node reads the clusters' authority again after a rotation: it answers the authority as its source has it now
 * (a node on another machine asks the control plane). Unset (the default): the node's own, which cannot change while it
 * runs, so nothing is read again.
 */
export const DatabaseAuthorityReread = Context.Reference<(() => Promise<string | undefined>) | undefined>(
  "@hostplane/node/bindings/DatabaseAuthorityReread",
  { defaultValue: () => undefined }
)

/** The TLS errors of a certificate signed by an authority the node does not hold. */
const unknownAuthority = new Set([
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "CERT_SIGNATURE_FAILURE"
])

/** The authority is read again at most this often, however many queries fail on it. */
const rereadEveryMs = 5_000

/**
 * `env.db`: one pool per project database, connected as the project's role with the binding's own credentials,
 * opened at the first query and closed when the grant goes or its connection data changes.
 */
export const makeDbBinding = (options: {
  /** The authority that signs the node's clusters (verifies them); without it TLS is encrypted, not verified. */
  readonly authority: string | undefined
  /** A statement that has not answered by then rejects (the worker's own deadline is the edge's). */
  readonly queryTimeoutMs: number
  /** A connection not established by then rejects: 10 s unless given (a test of the deadline gives less). */
  readonly connectTimeoutMs?: number | undefined
  /** Reads the authority again when a certificate is not signed by the one held (see `DatabaseAuthorityReread`). */
  readonly reread?: (() => Promise<string | undefined>) | undefined
}) => {
  const pools = new Map<string, Held>()
  let authority = options.authority
  let reading: Promise<boolean> | undefined
  let readAt = 0

  /**
   * After a certificate another authority signed: reads the authority again (one read at a time, at most once per
   * `rereadEveryMs`) and answers whether it changed, so the query is tried once more with it.
   */
  const rereadAuthority = (): Promise<boolean> => {
    const reread = options.reread
    if (reread === undefined) return Promise.resolve(false)
    if (reading !== undefined) return reading
    if (Date.now() - readAt < rereadEveryMs) return Promise.resolve(false)
    readAt = Date.now()
    const before = authority
    reading = reread().then(
      (fresh) => {
        authority = fresh
        return fresh !== before
      },
      () => false
    )
    void reading.finally(() => (reading = undefined))
    return reading
  }

  const poolOf = (projectId: string, db: Database.DatabaseConnect): pg.Pool => {
    const held = pools.get(projectId)
    if (held !== undefined && held.url === db.url && held.authority === authority) return held.pool
    if (held !== undefined) void held.pool.end().catch(() => undefined)
    const pool = new pg.Pool({
      host: db.host,
      port: db.port,
      database: db.database,
      user: db.user,
      password: db.password,
      ssl:
        db.sslmode === "disable" ? false : authority === undefined ? { rejectUnauthorized: false } : { ca: authority },
      max: poolSize,
      idleTimeoutMillis: 30_000,
      connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
      query_timeout: options.queryTimeoutMs,
      options: "-c TimeZone=UTC",
      application_name: "hostplane-worker",
      types
    })
    // An idle connection the server ends (a restart, a revoked role) must not crash the node.
    pool.on("error", () => undefined)
    pools.set(projectId, { url: db.url, authority, pool })
    return pool
  }

  const query = async (
    projectId: string,
    db: Database.DatabaseConnect,
    args: ReadonlyArray<unknown>
  ): Promise<BindingAnswer> => {
    const [text, params = []] = args
    if (typeof text !== "string" || text.trim() === "") {
      throw new BindingFailure("bad_request", "query(text, params?) takes the statement as a non-empty string")
    }
    if (utf8Length(text) > maxTextBytes) {
      throw new BindingFailure("bad_request", `a statement is at most ${maxTextBytes} bytes`)
    }
    if (!Array.isArray(params) || params.some((param) => param !== null && typeof param !== "string")) {
      throw new BindingFailure("bad_request", "params is an array of values sent as text")
    }
    if (params.length > maxParams) {
      throw new BindingFailure("bad_request", `a statement takes at most ${maxParams} parameters`)
    }
    let result: pg.QueryResult
    try {
      // The extended protocol always: one statement per call, even without parameters.
      // node-postgres's types do not list `queryMode`; its Query honors it.
      const config = { text, values: params as Array<string | null>, queryMode: "extended" } as pg.QueryConfig
      result = await poolOf(projectId, db)
        .query(config)
        .catch(async (error: unknown) => {
          // The clusters' authority was rotated since it was read: once more with the one read now.
          const code = (error as { code?: unknown }).code
          if (typeof code === "string" && unknownAuthority.has(code) && (await rereadAuthority())) {
            return poolOf(projectId, db).query(config)
          }
          throw error
        })
    } catch (error) {
      const code = sqlstate((error as { code?: unknown }).code)
      const message = error instanceof Error ? error.message : String(error)
      if (code !== undefined) return { error: { message, code } }
      throw new BindingFailure("database_unavailable", message)
    }
    const value = { rows: result.rows, rowCount: result.rowCount ?? 0 }
    const size = utf8Length(JSON.stringify(value))
    if (size > maxResultBytes) {
      throw new BindingFailure(
        "result_too_large",
        `the result is ${size} bytes; at most ${maxResultBytes} are answered`
      )
    }
    return { value }
  }

  /** The pools of projects whose grant went (or changed): closed; their queries fail from now on. */
  const converge = (projectId: string, db: Database.DatabaseConnect | null) => {
    const held = pools.get(projectId)
    if (held === undefined || (db !== null && db.url === held.url)) return
    pools.delete(projectId)
    void held.pool.end().catch(() => undefined)
  }

  const close = async () => {
    const all = [...pools.values()]
    pools.clear()
    await Promise.all(all.map((held) => held.pool.end().catch(() => undefined)))
  }

  return { query, converge, close, openPools: () => pools.size }
}

/** `env.db`: `{ connectionString, query }` on the project's database, verified by the node's cluster authority. */
export const dbBinding = workerBinding({
  name: "db",
  worker: "db.js",
  make: (options) =>
    Effect.gen(function* () {
      const node = yield* Database.DatabaseNode
      const db = makeDbBinding({
        authority: node.authority,
        queryTimeoutMs: options.queryTimeoutMs,
        reread: yield* DatabaseAuthorityReread
      })
      return {
        entry: (value) => ({ connectionString: value.url }),
        calls: { query: (call, args) => db.query(call.projectId, call.granted(), args) },
        converge: db.converge,
        close: db.close
      }
    }),
  dev: {
    declared: (manifest) => manifest.database === true,
    entry: (local) => ({ connectionString: local.database?.url ?? "" }),
    unavailable: "needs the linked project's database: run hostplane dev --linked (the database granted)",
    methods: { calls: ["query"] },
    make: (local) => {
      const database = local.database
      if (database === undefined) return undefined
      const db = makeDbBinding({ authority: undefined, queryTimeoutMs: 30_000 })
      return { calls: { query: (call, args) => db.query(call.projectId, database, args) }, close: db.close }
    }
  }
})
