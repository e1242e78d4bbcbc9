import { mkdtempSync, rmSync } from "node:fs"
import { randomBytes } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { openStream } from "../../http/test/support/EventStream.ts"
import { freePort, type ServerProcess, signIn, startServer, stopServer } from "./support/ServerProcess.ts"

const nodeToken = "node-token-for-the-logs-test"

/**
 * decisions.md part 13's runtime logs on two replicas of the server built exactly as `npm start` builds it, sharing
 * one PostgreSQL: a node reports invocations to one replica, a member following the project's stream on the other
 * gets them (PostgreSQL `NOTIFY`), and a reconnect with `Last-Event-ID` resumes after the last event it had.
 */
describe("runtime logs across two replicas of the standalone server", () => {
  const scope = Scope.makeUnsafe()
  const replicas: Array<ServerProcess & { readonly base: string; readonly dataDir: string }> = []
  beforeAll(async () => {
    // One migrated database of the test server for both replicas, dropped when the scope closes.
    const database = await Effect.runPromise(
      Effect.map(Layer.buildWithScope(TestDatabase.layer, scope), (context) => Context.get(context, TestDatabase))
    )
    const url = Redacted.value(database.url)
    const sealKey = randomBytes(32).toString("base64")
    for (const name of ["a", "b"]) {
      const dataDir = mkdtempSync(join(tmpdir(), `hostplane-logs-${name}-`))
      const port = await freePort()
      const base = `http://127.0.0.1:${port}`
      const started = await startServer(base, {
        SERVICE_DATA_DIR: dataDir,
        SERVICE_LISTEN: `127.0.0.1:${port}`,
        SERVICE_EDGE_LISTEN: `127.0.0.1:${await freePort()}`,
        SERVICE_DNS_LISTEN: "off",
        SERVICE_PUBLIC_URL: base,
        DATABASE_URL: url,
        SERVICE_ENABLE_DEV_AUTH: "true",
        SERVICE_SEAL_KEY: sealKey,
        SERVICE_NODE_TOKEN: nodeToken
      })
      replicas.push({ ...started, base, dataDir })
    }
  }, 300_000)
  afterAll(async () => {
    for (const replica of replicas) {
      await stopServer(replica.child, "SIGKILL")
      rmSync(replica.dataDir, { recursive: true, force: true })
    }
    await Effect.runPromise(Scope.close(scope, Exit.void))
  })

  const report = (base: string, events: ReadonlyArray<unknown>, token: string | null = nodeToken) =>
    fetch(`${base}/v1/node/logs`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(token === null ? {} : { authorization: `Bearer ${token}` })
      },
      body: JSON.stringify({ events })
    }).then(async (reply) => ({ status: reply.status, body: (await reply.json()) as any }))

  it("an event reported to one replica reaches a stream on the other; Last-Event-ID resumes after it", async () => {
    const [a, b] = replicas as [(typeof replicas)[number], (typeof replicas)[number]]
    const owner = await signIn(a.base, `logs-owner-${randomBytes(4).toString("hex")}`)
    const slug = `logs-${randomBytes(4).toString("hex")}`
    expect((await owner.call("POST", "/v1/orgs", { name: "Logs", slug })).status).toBe(201)
    const project = await owner.call("POST", `/v1/orgs/${slug}/projects`, { name: "site" })
    expect(project.status).toBe(201)
    const event = (message: string) => ({
      projectId: project.body.id,
      deploymentId: "dep_x",
      timestamp: Date.now(),
      outcome: "ok",
      request: { method: "GET", url: "http://site.apps.localhost/" },
      response: { status: 200 },
      durationMs: 2,
      logs: [{ level: "log", message: [message], timestamp: Date.now() }],
      exceptions: []
    })
    expect((await report(a.base, [event("refused")], null)).status).toBe(401)
    expect((await report(a.base, [event("refused")], "wrong")).status).toBe(401)
    expect((await report(a.base, [])).status).toBe(400)

    const url = (base: string) => `${base}/v1/orgs/${slug}/projects/site/logs/stream`
    const onB = await openStream(url(b.base), { token: owner.token })
    expect(onB.status).toBe(200)
    expect(onB.headers.get("content-type")).toMatch(/^text\/event-stream/)
    await onB.until((frames) => frames.some((frame) => frame.comment !== undefined))
    expect(await report(a.base, [event("one")])).toEqual({ status: 202, body: { accepted: 1 } })
    await onB.until((frames) => frames.some((frame) => frame.data !== undefined))
    const [one] = onB.events()
    expect(one.logs[0].message).toEqual(["one"])
    const listed = await owner.call("GET", `/v1/orgs/${slug}/projects/site/logs`)
    expect(listed.body).toEqual({ items: [one], nextCursor: null })
    onB.close()

    expect(await report(b.base, [event("two"), event("three")])).toEqual({ status: 202, body: { accepted: 2 } })
    const resumed = await openStream(url(a.base), { token: owner.token, lastEventId: one.id })
    await resumed.until((frames) => frames.filter((frame) => frame.data !== undefined).length >= 2)
    expect(resumed.events().map((e) => e.logs[0].message[0])).toEqual(["two", "three"])
    resumed.close()

    const outsider = await signIn(b.base, `logs-outsider-${randomBytes(4).toString("hex")}`)
    const refused = await openStream(url(b.base), { token: outsider.token })
    expect({ status: refused.status, code: (await refused.body()).code }).toEqual({ status: 404, code: "not_found" })
  })
})
