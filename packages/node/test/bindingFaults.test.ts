import { Storage } from "@hostplane/core"
import { Effect, Stream } from "effect"
import * as Net from "node:net"
import { afterAll, describe, expect, it } from "vitest"
import { makeDbBinding } from "../src/bindings/Db.ts"
import { BindingFailure } from "../src/bindings/Failure.ts"
import { makeStorageBinding } from "../src/bindings/Storage.ts"

const password = "s3cret-password-never-logged"

const listening = async (onSocket: (socket: Net.Socket) => void) => {
  const server = Net.createServer(onSocket)
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return { server, port: (server.address() as Net.AddressInfo).port }
}

const connectTo = (port: number) => ({
  host: "127.0.0.1",
  port,
  database: "app",
  user: "prj_fault",
  password,
  sslmode: "disable",
  url: `postgres://prj_fault:${password}@127.0.0.1:${port}/app?sslmode=disable`
})

const failureOf = async (promise: Promise<unknown>) => {
  const error = await promise.then(
    () => undefined,
    (error: unknown) => error
  )
  expect(error).toBeInstanceOf(BindingFailure)
  return error as BindingFailure
}

describe("a binding's dependency down: a clear rejection, never a crash or a hang", () => {
  const servers: Array<Net.Server> = []
  afterAll(() => {
    for (const server of servers) server.close()
  })

  it("env.db with its database unreachable rejects database_unavailable without the password; the pool closes with the grant", async () => {
    const { server, port } = await listening((socket) => socket.destroy())
    servers.push(server)
    const db = makeDbBinding({ authority: undefined, queryTimeoutMs: 5_000 })
    const refused = await failureOf(db.query("prj_fault", connectTo(port), ["select 1"]))
    expect(refused.code).toBe("database_unavailable")
    expect(refused.message).toMatch(/^database_unavailable: /)
    expect(refused.message).not.toContain(password)
    expect(db.openPools()).toBe(1)
    db.converge("prj_fault", null)
    expect(db.openPools()).toBe(0)
    await db.close()
  })

  it("env.db with a database that accepts and never answers rejects once the connection deadline passes", async () => {
    const { server, port } = await listening(() => undefined)
    servers.push(server)
    // A 1 s connection deadline (10 s unless given), so the test waits past it in a second.
    const db = makeDbBinding({ authority: undefined, queryTimeoutMs: 2_000, connectTimeoutMs: 1_000 })
    const silent = await failureOf(db.query("prj_silent", connectTo(port), ["select 1"]))
    expect(silent.code).toBe("database_unavailable")
    expect(silent.message).not.toContain(password)
    await db.close()
  }, 30_000)

  it("env.db refuses oversize statements and wrong parameter types before connecting", async () => {
    const db = makeDbBinding({ authority: undefined, queryTimeoutMs: 2_000 })
    const at = connectTo(1)
    expect((await failureOf(db.query("p", at, ["x".repeat(1024 * 1024 + 1)]))).code).toBe("bad_request")
    expect((await failureOf(db.query("p", at, ["select $1", [{}]]))).code).toBe("bad_request")
    expect((await failureOf(db.query("p", at, [null]))).code).toBe("bad_request")
    expect(db.openPools()).toBe(0)
    await db.close()
  })

  it("env.storage with its object store down rejects storage_unavailable", async () => {
    const down = new Storage.ObjectStoreError({ reason: "Unavailable", message: "the bucket did not answer" })
    const objects = Storage.ObjectStore.of({
      put: () => Effect.fail(down),
      head: () => Effect.fail(down),
      get: () => Stream.fail(down),
      list: () => Stream.fail(down),
      remove: () => Effect.fail(down),
      removePrefix: () => Effect.fail(down)
    })
    const reports: Array<unknown> = []
    const storage = makeStorageBinding({
      objects,
      report: async (items) => void reports.push(items),
      reportEveryMs: 60_000
    })
    const binding = { prefix: "prj_down/", quotaBytes: 1_000 }
    for (const [method, args] of [
      ["head", ["a"]],
      ["list", [{}]],
      ["delete", [["a"]]]
    ] as const) {
      const failed = await failureOf(storage.call("prj_down", binding, method, args))
      expect(failed.message, method).toBe("storage_unavailable: the bucket did not answer")
    }
    await storage.close()
    expect(reports).toEqual([])
  })
})
