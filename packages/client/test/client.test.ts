import { Errors } from "@hostplane/core"
import { layerMemory } from "@hostplane/testkit"
import { Effect, Layer, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { client, startTestServer, type TestServer, unique } from "../../http/test/support/TestServer.ts"
import { errorInfo, HostplaneClient, HostplaneError, makeClient } from "../src/index.ts"

describe("@hostplane/client against a test server", () => {
  let server: TestServer
  let token: string
  beforeAll(async () => {
    server = await startTestServer(Layer.fresh(layerMemory))
    token = (await client(server.url).login(unique("client"))).token
  })
  afterAll(() => server?.close())

  it("makeClient: typed calls as Promises; a declared failure rejects with a HostplaneError carrying the code", async () => {
    const hostplane = makeClient({ baseUrl: `${server.url}/v1`, token })
    const me = await hostplane.identity.me()
    const slug = me.orgs[0]!.slug
    const project = await hostplane.projects.create({
      params: { orgSlug: slug },
      payload: { name: unique("p") } as never
    })
    const list = await hostplane.projects.list({ params: { orgSlug: slug } })
    expect(list.items.map((p) => p.name)).toContain(project.name)
    const failure = await hostplane.secrets
      .remove({ params: { orgSlug: slug, projectName: project.name, secretName: "NOPE" } })
      .then(
        () => undefined,
        (error: unknown) => error
      )
    expect(failure).toBeInstanceOf(HostplaneError)
    expect(failure).toMatchObject({ status: 404, code: "not_found" })
  })

  it("without a token the 401 is unauthorized; an unreachable server is code unreachable", async () => {
    const anonymous = makeClient({ baseUrl: server.url })
    await expect(anonymous.identity.me()).rejects.toMatchObject({ status: 401, code: "unauthorized" })
    const nowhere = makeClient({ baseUrl: "http://127.0.0.1:9" })
    await expect(nowhere.identity.config()).rejects.toMatchObject({ code: "unreachable" })
  })

  it("the Effect client: declared errors are core's own classes; an undeclared answer is a HostplaneError", async () => {
    const program = Effect.gen(function* () {
      const hostplane = yield* HostplaneClient
      const me = yield* hostplane.identity.me()
      const slug = me.orgs[0]!.slug
      const missing = yield* Effect.flip(hostplane.projects.get({ params: { orgSlug: slug, projectName: "nope" } }))
      // A bundle that is not gzip: the server's 400 invalid_bundle, decoded into core's class.
      const project = yield* hostplane.projects.create({
        params: { orgSlug: slug },
        payload: { name: unique("b") } as never
      })
      const refused = yield* Effect.flip(
        hostplane.deployments.upload({
          params: { orgSlug: slug, projectName: project.name },
          headers: {},
          payload: Stream.make(new TextEncoder().encode("not a gzip"))
        })
      )
      return { missing, refused }
    }).pipe(
      Effect.provide(HostplaneClient.layer({ baseUrl: server.url, token })),
      Effect.provide(FetchHttpClient.layer)
    )
    const { missing, refused } = await Effect.runPromise(program)
    expect(missing).toBeInstanceOf(Errors.NotFound)
    expect(errorInfo(missing)).toMatchObject({ status: 404, code: "not_found" })
    expect(refused).toBeInstanceOf(Errors.InvalidBundle)
    expect(errorInfo(refused)).toMatchObject({ code: "invalid_bundle", details: { reason: "corrupt_gzip" } })
  })
})
