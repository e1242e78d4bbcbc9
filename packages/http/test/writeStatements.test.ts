import * as Pg from "@hostplane/adapters-pg"
import { layer as pgDatabase } from "@hostplane/adapters-pg/PgDatabase"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { countingProxy } from "./support/CountingProxy.ts"
import { auditOf, client, startTestServer, unique } from "./support/TestServer.ts"

// Every writer of an org waits for its lock, so each round trip between the lock and the commit is paid by
// all of them. An authenticated write makes as few as it can; this pins how many, through a TCP proxy.

describe("the statements of an authenticated write", () => {
  const database = ManagedRuntime.make(TestDatabase.layer)
  let url: Redacted.Redacted<string>
  beforeAll(async () => {
    url = (await database.runPromise(Effect.service(TestDatabase))).url
  })
  afterAll(() => database.dispose())

  it("PUT a secret: the access read, then one statement with the lock, its reads, the write, the audit row and the revision", async () => {
    const proxy = await countingProxy(new URL(Redacted.value(url)))
    const server = await startTestServer(Pg.layer.pipe(Layer.provideMerge(pgDatabase(proxy.url))))
    try {
      const api = client(server.url)
      const admin = await api.login(unique("writer"))
      const slug = unique("org")
      await api.post("/v1/orgs", { name: "Counted", slug }, { token: admin.token })
      await api.post(`/v1/orgs/${slug}/projects`, { name: "site" }, { token: admin.token })
      const path = `/v1/orgs/${slug}/projects/site/secrets/COUNTED`
      expect((await api.put(path, { value: "one" }, { token: admin.token })).status).toBe(200)
      // The org's creation notifies the auth cache's listener, which forgets the user when it lands (within a second):
      // wait it out, then warm the cache again, so the counted put reads no session.
      await new Promise((resolve) => setTimeout(resolve, 1500))
      expect((await api.put(path, { value: "two" }, { token: admin.token })).status).toBe(200)
      proxy.statements.length = 0
      const put = await api.put(path, { value: "three" }, { token: admin.token })
      // The edge cache's own revision read runs every 250 ms on the same pool, whatever the requests do: one that
      // lands while the put runs (likely on a loaded machine) is not the write's.
      const statements = proxy.statements.filter(
        (statement) => !/FROM node_revision c\s+LEFT JOIN LATERAL/.test(statement)
      )
      expect(put.status).toBe(200)
      expect(put.body.version).toBe(3)
      // The access read, before any lock.
      expect(statements[0], statements.join("\n---\n")).toMatch(/^\s*SELECT[\s\S]*FROM orgs o\s+LEFT JOIN memberships/)
      // Then one statement and no transaction: the org lock with its reads, the guard, the upsert, the audit row and
      // the revision raise together, so the lock is held only while PostgreSQL runs it.
      const write = statements[1]!
      expect(write).toMatch(/hostplane_envelope_lock\(/)
      expect(write).toMatch(/INSERT INTO secrets/)
      expect(write).toMatch(/INSERT INTO audit_events/)
      expect(write).toMatch(/UPDATE node_revision/)
      expect(statements, statements.join("\n---\n")).toHaveLength(2)
      const sets = (await auditOf(server, slug)).filter((event) => event.action === "secret.set")
      expect(sets.map((event) => [event.actorId, event.data])).toEqual(
        Array.from({ length: 3 }, () => [admin.userId, { name: "COUNTED" }])
      )
    } finally {
      await server.close()
      await proxy.close()
    }
  })
})
