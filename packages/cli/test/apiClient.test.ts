import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { groups } from "@hostplane/api/Api"
import { type Client, make } from "@hostplane/client"
import { Effect } from "effect"
import type { HttpClient } from "effect/http"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { groupModules, makeClient } from "../src/ApiClient.ts"

interface Seen {
  readonly method: string | undefined
  readonly url: string | undefined
  readonly authorization: string | undefined
  readonly body: string
}

let server: Http.Server
let base = ""
const seen: Array<Seen> = []

beforeAll(async () => {
  server = Http.createServer((request, response) => {
    let body = ""
    request.on("data", (chunk) => (body += chunk))
    request.on("end", () => {
      seen.push({ method: request.method, url: request.url, authorization: request.headers.authorization, body })
      if (request.url === "/v1/orgs/gone/projects") {
        response.writeHead(404, { "content-type": "application/json" })
        response.end(JSON.stringify({ code: "not_found", message: "no org gone" }))
        return
      }
      response.writeHead(200, { "content-type": "application/json" })
      response.end(JSON.stringify({ items: [] }))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(() => new Promise((resolve) => server.close(resolve)))

const run = <A, E>(
  client: Effect.Effect<Client, never, HttpClient.HttpClient>,
  call: (api: Client) => Effect.Effect<A, E>
) =>
  Effect.runPromise(
    client.pipe(
      Effect.flatMap((api) => Effect.result(call(api))),
      Effect.provide(NodeHttpClient.layerNodeHttp)
    )
  )

describe("the CLI's API client, built group by group", () => {
  it("names every group of the API, each loading the group of its name", async () => {
    expect(Object.keys(groupModules).sort()).toEqual([...groups.map((group) => group.identifier), "devAuth"].sort())
    for (const [name, load] of Object.entries(groupModules)) expect((await load()).identifier).toBe(name)
  })

  it("sends what the whole API's client sends and reads the same answers and errors", async () => {
    const options = { baseUrl: `${base}/v1`, token: "secret-token" }
    const calls = (api: Client) =>
      Effect.all([
        Effect.result(api.projects.list({ params: { orgSlug: "acme" } })),
        Effect.result(api.projects.list({ params: { orgSlug: "gone" } })),
        Effect.result(api.secrets.list({ params: { orgSlug: "acme", projectName: "site" } }))
      ])
    seen.length = 0
    const whole = await run(make(options), calls)
    const wholeSeen = seen.splice(0)
    const byGroup = await run(makeClient(options), calls)
    expect(seen).toEqual(wholeSeen)
    expect(wholeSeen.map((request) => `${request.method} ${request.url} ${request.authorization}`)).toEqual([
      "GET /v1/orgs/acme/projects Bearer secret-token",
      "GET /v1/orgs/gone/projects Bearer secret-token",
      "GET /v1/orgs/acme/projects/site/secrets Bearer secret-token"
    ])
    expect(byGroup).toEqual(whole)
    const [, missing] = byGroup._tag === "Success" ? byGroup.success : []
    expect(missing?._tag === "Failure" ? (missing.failure as { _tag: string })._tag : undefined).toBe("NotFound")
  })
})
