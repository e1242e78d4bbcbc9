import * as Pg from "@hostplane/adapters-pg"
import { BackupStoreDisk } from "@hostplane/adapters-providers"
import { Database, Jobs } from "@hostplane/core"
import { Effect, Layer } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { rfc3339 } from "../src/bindings/Db.ts"
import { bindingsBundle, callBinding, envOf } from "./support/BindingsWorker.ts"
import { eventually, useRuntimeSuite } from "./support/RuntimeServer.ts"

const folder = mkdtempSync(Path.join(Os.tmpdir(), "hostplane-node-db-"))
afterAll(() => rmSync(folder, { recursive: true, force: true }))

const slow = 240_000

describe("env.db: the project's database from worker code (real workerd, real PostgreSQL cluster)", () => {
  const suite = useRuntimeSuite(
    { timeoutMs: 20_000 },
    {},
    {
      providers: [
        Layer.mergeAll(
          Pg.DatabaseNodeEmbedded.layer({ directory: Path.join(folder, "node"), durable: false }),
          BackupStoreDisk.layer(Path.join(folder, "backups"))
        )
      ]
    }
  )
  const admin = () => ({ token: suite.admin.token })
  const call = (hostname: string, method: string, args: ReadonlyArray<unknown>) =>
    callBinding(suite.edgeUrl, hostname, "db", method, args)

  /** A deployed project, then its database granted; answers what `GET .../database/connect` shows. */
  const granted = async () => {
    const project = await suite.newProject()
    expect((await suite.deploy(project.slug, project.name, bindingsBundle())).status).toBe(201)
    const before = await envOf(suite.edgeUrl, project.hostname)
    expect(before.db).toBeNull()
    expect(before.keys).not.toContain("db")
    const base = `/v1/orgs/${project.slug}/projects/${project.name}/database`
    expect((await suite.api.post(base, undefined, admin())).status).toBe(200)
    const connect = await suite.api.get(`${base}/connect`, admin())
    expect(connect.status).toBe(200)
    // The grant reaches the running worker at the next convergence, without a redeploy.
    expect(await eventually(async () => (await envOf(suite.edgeUrl, project.hostname)).db !== null, 5_000)).toBe(true)
    return { ...project, base, connect: connect.body as { url: string; user: string; password: string } }
  }
  /**
   * Two granted projects the tests share, each made (and its grant checked) by the first test that needs it: a
   * project, its deploy and its cluster are most of a test's time. Each test's tables have names of their own.
   */
  let one: ReturnType<typeof granted> | undefined
  let two: ReturnType<typeof granted> | undefined
  const first = () => (one ??= granted())
  const second = () => (two ??= granted())

  it(
    "a grant appears as env.db without a redeploy; connectionString is the connect URL; queries run as the project role with part 13's types",
    async () => {
      const project = await first()
      const env = await envOf(suite.edgeUrl, project.hostname)
      expect(env.db).toEqual({ connectionString: project.connect.url, query: "function" })
      const who = await call(project.hostname, "query", ["select current_user as role, current_database() as db"])
      expect(who).toEqual({ value: { rows: [{ role: project.connect.user, db: "app" }], rowCount: 1 } })

      const ddl = await call(project.hostname, "query", [
        `create table things (
          id int4 primary key, small int2, big int8, price numeric(10, 2), ratio float8, half float4, ok bool,
          doc jsonb, raw json, at timestamptz, local timestamp, day date, label text)`
      ])
      expect(ddl).toEqual({ value: { rows: [], rowCount: 0 } })
      const inserted = await call(project.hostname, "query", [
        `insert into things values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13), (2, null, null, null, null, null, null, null, null, null, null, null, null)`,
        [
          1,
          7,
          "9007199254740993",
          "12.30",
          1.5,
          0.25,
          true,
          { a: [1, 2] },
          { b: "x" },
          "2026-11-29T04:30:00.123456Z",
          "2026-11-29 04:30:00",
          "2026-11-29",
          "héllo"
        ]
      ])
      expect(inserted).toEqual({ value: { rows: [], rowCount: 2 } })
      const selected = await call(project.hostname, "query", ["select * from things order by id"])
      expect(selected.value.rowCount).toBe(2)
      expect(selected.value.rows[0]).toEqual({
        id: 1,
        small: 7,
        big: "9007199254740993",
        price: "12.30",
        ratio: 1.5,
        half: 0.25,
        ok: true,
        doc: { a: [1, 2] },
        raw: { b: "x" },
        at: "2026-11-29T04:30:00.123456+00:00",
        local: "2026-11-29T04:30:00Z",
        day: "2026-11-29",
        label: "héllo"
      })
      expect(selected.value.rows[1]).toMatchObject({ id: 2, small: null, doc: null, at: null })
      const updated = await call(project.hostname, "query", ["update things set label = $1 where id > $2", ["x", 0]])
      expect(updated.value.rowCount).toBe(2)
    },
    slow
  )

  it(
    "a PostgreSQL error rejects with its SQLSTATE; wrong argument types reject with a message; one statement per call",
    async () => {
      const project = await first()
      expect(await call(project.hostname, "query", ["select * from missing_table"])).toEqual({
        error: { message: 'relation "missing_table" does not exist', code: "42P01" }
      })
      expect(await call(project.hostname, "query", ["select 1/0"])).toMatchObject({ error: { code: "22012" } })
      const twoStatements = await call(project.hostname, "query", ["select 1; select 2"])
      expect(twoStatements.error?.code).toBe("42601")
      const numberText = await call(project.hostname, "query", [42])
      expect(numberText.error?.message).toMatch(/^bad_request: /)
      const badParams = await call(project.hostname, "query", ["select $1", "not an array"])
      expect(badParams.error?.message).toMatch(/^bad_request: params/)
      const huge = await call(project.hostname, "query", ["select repeat('x', 40 * 1024 * 1024) as big"])
      expect(huge.error?.message).toMatch(/^result_too_large: /)
      // The node still answers after all of that.
      expect((await call(project.hostname, "query", ["select 1 as n"])).value).toEqual({
        rows: [{ n: 1 }],
        rowCount: 1
      })
    },
    slow
  )

  it(
    "another project's tables are out of reach: each worker connects as its own role to its own database",
    async () => {
      const [mine, other] = [await first(), await second()]
      await call(mine.hostname, "query", ["create table secrets_of_one (v text)"])
      await call(mine.hostname, "query", ["insert into secrets_of_one values ('mine')"])
      const fromTwo = await call(other.hostname, "query", ["select * from secrets_of_one"])
      expect(fromTwo.error?.code).toBe("42P01")
      expect(mine.connect.user).not.toBe(other.connect.user)
    },
    slow
  )

  it(
    "a database delete takes env.db away at the next convergence, without a redeploy",
    async () => {
      // The last test: the second project's database goes.
      const project = await second()
      expect((await call(project.hostname, "query", ["select 1 as n"])).value.rowCount).toBe(1)
      const started = await suite.api.post(`${project.base}/delete`, { confirm: project.name }, admin())
      expect(started.status).toBe(202)
      await suite.server.run(
        Effect.flatMap(Effect.service(Database.Databases), (databases) =>
          Jobs.JobRunner.runOnce(databases.handlers.map((handler) => Effect.succeed(handler)))
        )
      )
      expect(await eventually(async () => (await envOf(suite.edgeUrl, project.hostname)).db === null, 5_000)).toBe(true)
    },
    slow
  )
})

describe("env.db timestamps as RFC 3339", () => {
  it("keeps PostgreSQL's precision and offset; a timestamp without zone is UTC; infinity stays", () => {
    expect(rfc3339("2026-11-29 04:30:00.123456+00")).toBe("2026-11-29T04:30:00.123456+00:00")
    expect(rfc3339("2026-11-29 04:30:00+05:30")).toBe("2026-11-29T04:30:00+05:30")
    expect(rfc3339("2026-11-29 04:30:00")).toBe("2026-11-29T04:30:00Z")
    expect(rfc3339("1900-01-01 00:00:00+00:09:21")).toBe("1899-12-31T23:50:39.000Z")
    expect(rfc3339("infinity")).toBe("infinity")
  })
})
