import { ArtifactStoreDisk, BundleReader, PasswordHasherScrypt, SealerAesGcm } from "@hostplane/adapters-providers"
import { HostplaneError } from "@hostplane/client/ClientOf"
import { configLayer, Errors, Identity, Kernel } from "@hostplane/core"
import { layerMemory, portsOff } from "@hostplane/testkit"
import { dnsNone } from "@hostplane/testkit/dns/DnsNone"
import { Effect, Layer, Logger, Option } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { HostAuthenticator, type HostRequest } from "../src/auth/HostAuthenticator.ts"
import { mount, type Mounted, normalizePrefix, underPrefix } from "../src/server/Mount.ts"

// The host's own sessions: a cookie value names a host user; the behaviour switch makes the authenticator fail.
const hostSessions = new Map<string, { id: number; email: string }>([
  ["s-ada", { id: 7, email: "ada@host.test" }],
  ["s-bob", { id: 8, email: "bob@host.test" }]
])
let behaviour: "ok" | "throw" | "hang" | "garbage" = "ok"
const seen: Array<HostRequest> = []

const authenticator = HostAuthenticator.fromFunction(
  async (request) => {
    seen.push(request)
    if (behaviour === "throw") throw new Error("session store down")
    if (behaviour === "hang") return new Promise<never>(() => {})
    if (behaviour === "garbage") return { provider: "", subject: 7 } as never
    const user = hostSessions.get(request.cookies["host_session"] ?? "")
    return user === undefined ? undefined : { provider: "host", subject: String(user.id), email: user.email }
  },
  { timeout: "200 millis" }
)

const ports = Layer.mergeAll(
  Layer.fresh(layerMemory),
  configLayer({ identity: { devAuth: true } }),
  portsOff,
  authenticator,
  dnsNone,
  SealerAesGcm.layerEphemeral,
  PasswordHasherScrypt.layerWith({ logN: 10, r: 8, p: 1 }),
  BundleReader.layer().pipe(Layer.provideMerge(ArtifactStoreDisk.layerTemp))
).pipe(Layer.provide(Logger.layer([])))

let hostplane: Mounted<unknown>
let server: Http.Server
let base: string

beforeAll(async () => {
  hostplane = (await mount(ports, { prefix: "/platform/" })) as Mounted<unknown>
  // The host's own server: hostplane as middleware under /platform, everything else the host's.
  server = Http.createServer((request, response) =>
    hostplane.listener(request, response, () => response.writeHead(200).end("the host's own page"))
  )
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
  await hostplane.dispose()
})

const run = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.runPromise(Effect.provideContext(effect, hostplane.context as never))

type Send = (path: string, init?: RequestInit) => Promise<Response>
const overNode: Send = (path, init) => fetch(`${base}${path}`, init)
const overWeb: Send = (path, init) => hostplane.handler(new Request(`http://host.test${path}`, init))

const as = (session: string, init: RequestInit = {}): RequestInit => ({
  ...init,
  headers: { ...(init.headers as Record<string, string>), cookie: `theme=dark; host_session=${session}` }
})
const json = (body: unknown, init: RequestInit = {}): RequestInit => ({
  ...init,
  method: "POST",
  headers: { ...(init.headers as Record<string, string>), "content-type": "application/json" },
  body: JSON.stringify(body)
})

describe("prefix", () => {
  it("a prefix is a path; /platform/ is /platform, a query or .. is refused by name", () => {
    expect(normalizePrefix("/platform/")).toBe("/platform")
    expect(normalizePrefix("")).toBe("")
    expect(() => normalizePrefix("platform")).toThrow(/prefix must be a path/)
    expect(() => normalizePrefix("/a/../b")).toThrow(/prefix/)
    expect(() => normalizePrefix("/a?b")).toThrow(/prefix/)
    expect(underPrefix("/platform", "/platform/v1/me")).toBe("/v1/me")
    expect(underPrefix("/platform", "/platform?x=1")).toBe("/?x=1")
    expect(underPrefix("/platform", "/platformer/v1/me")).toBeUndefined()
  })

  it("the API answers under the prefix; the host's own routes stay the host's", async () => {
    const index = await overNode("/platform/v1")
    expect(index.status).toBe(200)
    expect(await (await overNode("/")).text()).toBe("the host's own page")
    expect(await (await overNode("/v1/me")).text()).toBe("the host's own page")
    expect(await (await overNode("/platformer/v1/me")).text()).toBe("the host's own page")
  })

  it("the web handler answers under the prefix and 404s outside it", async () => {
    expect((await overWeb("/platform/v1")).status).toBe(200)
    const outside = await overWeb("/v1/me")
    expect(outside.status).toBe(404)
    expect(((await outside.json()) as { code: string }).code).toBe("not_found")
  })
})

describe.each([
  ["node listener", overNode],
  ["web handler", overWeb]
] as const)("the host's sign-in through the %s", (_, send) => {
  it("a host session is a hostplane user, created on first sight with a personal org", async () => {
    const me = await send("/platform/v1/me", as("s-ada"))
    expect(me.status).toBe(200)
    const body = (await me.json()) as { user: { id: string; provider: string; subject: string; email: string } }
    expect(body.user).toMatchObject({ provider: "host", subject: "7", email: "ada@host.test" })
    const again = (await (await send("/platform/v1/me", as("s-ada"))).json()) as typeof body & {
      orgs: ReadonlyArray<unknown>
    }
    expect(again.user.id).toBe(body.user.id)
    expect(again.orgs).toHaveLength(1)
    const user = await run(
      Effect.flatMap(Effect.service(Identity.UserStore), (users) => users.findByIdentity("host", "7"))
    )
    expect(Option.getOrThrow(user).id).toBe(body.user.id)
    expect(seen.at(-1)?.cookies).toMatchObject({ theme: "dark", host_session: "s-ada" })
    expect(seen.at(-1)?.url).toBe("/v1/me")
  })

  it("a host cookie with no user behind it is 401, and without one too", async () => {
    const unknown = await send("/platform/v1/me", as("s-nobody"))
    expect(unknown.status).toBe(401)
    expect(((await unknown.json()) as { code: string }).code).toBe("unauthorized")
    expect((await send("/platform/v1/me")).status).toBe(401)
  })

  it("hostplane's own tokens are still accepted beside the host's sign-in", async () => {
    const login = await send("/platform/v1/auth/dev/login", json({ subject: "own-token" }))
    const { token } = (await login.json()) as { token: string }
    const me = await send("/platform/v1/me", as("s-ada", { headers: { authorization: `Bearer ${token}` } }))
    expect(((await me.json()) as { user: { subject: string } }).user.subject).toBe("own-token")
    // A token that is wrong is 401 even with a host session: the bearer decides when it is sent.
    const stale = await send("/platform/v1/me", as("s-ada", { headers: { authorization: "Bearer nope" } }))
    expect(stale.status).toBe(401)
  })

  it("the rules, errors and audit are a caller's like any other", async () => {
    const orgs = (await (await send("/platform/v1/orgs", as("s-ada"))).json()) as {
      items: ReadonlyArray<{ slug: string }>
    }
    const personal = orgs.items[0]!
    const name = `p${Math.random().toString(36).slice(2, 8)}`
    const created = await send(`/platform/v1/orgs/${personal.slug}/projects`, as("s-ada", json({ name })))
    expect(created.status).toBe(201)
    const audit = await run(
      Effect.flatMap(Effect.service(Kernel.AuditLog), (log) => log.list({ action: "project.create" }))
    )
    const me = (await (await send("/platform/v1/me", as("s-ada"))).json()) as { user: { id: string } }
    expect(audit.find((event) => event.data["name"] === name)?.actorId).toBe(me.user.id)
    // Another host user is an outsider: 404, also for a body the route would refuse (authorization comes first).
    const outsider = await send(`/platform/v1/orgs/${personal.slug}/projects/${name}`, as("s-bob"))
    expect(outsider.status).toBe(404)
    const refused = await send(`/platform/v1/orgs/${personal.slug}/projects`, as("s-bob", json({ name: "Not A Slug" })))
    expect(refused.status).toBe(404)
    const invalid = await send(`/platform/v1/orgs/${personal.slug}/projects`, as("s-ada", json({ name: "Not A Slug" })))
    expect(invalid.status).toBe(400)
  })

  it("an Idempotency-Key belongs to the host's user: a retry is replayed", async () => {
    const key = `k-${Math.random().toString(36).slice(2)}`
    const body = { name: `Team ${key}` }
    const first = await send("/platform/v1/orgs", as("s-bob", json(body, { headers: { "idempotency-key": key } })))
    expect(first.status).toBe(201)
    const retry = await send("/platform/v1/orgs", as("s-bob", json(body, { headers: { "idempotency-key": key } })))
    expect(retry.status).toBe(201)
    expect(retry.headers.get("idempotent-replayed")).toBe("true")
    expect(await retry.json()).toEqual(await first.json())
  })

  it.each([
    ["throws", "throw", "failed"],
    ["does not answer in time", "hang", "timeout"],
    ["answers something that is not an identity", "garbage", "invalid"]
  ] as const)("an authenticator that %s is 503 naming it, and no user is created", async (_, mode, reason) => {
    behaviour = mode
    try {
      const reply = await send("/platform/v1/me", as("s-carol"))
      expect(reply.status).toBe(503)
      expect(reply.headers.get("x-request-id")).toMatch(/^req_/)
      const body = (await reply.json()) as { code: string; details: { reason: string } }
      expect(body).toMatchObject({ code: "host_authenticator_unavailable", details: { reason } })
      // A public route needs no caller, so it does not ask the authenticator.
      expect((await send("/platform/v1/config", as("s-carol"))).status).toBe(200)
      // An input refusal of an org route checks authorization first: the same 503, not 400 or 500.
      const refusal = await send("/platform/v1/orgs/someone/projects", as("s-carol", json({ name: "Not A Slug" })))
      expect(refusal.status).toBe(503)
    } finally {
      behaviour = "ok"
    }
    const users = await run(
      Effect.flatMap(Effect.service(Identity.UserStore), (users) => users.findByIdentity("host", "9"))
    )
    expect(Option.isNone(users)).toBe(true)
  })
})

describe("in-process calls", () => {
  it("the Promise client acts as a host identity, with the API's rules and errors, without a socket", async () => {
    const ada = hostplane.asUser({ provider: "host", subject: "7", email: "ada@host.test" })
    const me = await ada.identity.me()
    expect(me.user).toMatchObject({ provider: "host", subject: "7" })
    const personal = me.orgs[0]!
    const name = `q${Math.random().toString(36).slice(2, 8)}`
    const project = await ada.projects.create({ params: { orgSlug: personal.slug }, payload: { name } })
    expect(project.name).toBe(name)
    const audit = await run(
      Effect.flatMap(Effect.service(Kernel.AuditLog), (log) => log.list({ action: "project.create" }))
    )
    expect(audit.find((event) => event.data["name"] === name)?.actorId).toBe(me.user.id)
    const dave = hostplane.asUser({ provider: "host", subject: "10" })
    const refused = await dave.projects.get({ params: { orgSlug: personal.slug, projectName: name } }).then(
      () => undefined,
      (error: unknown) => error
    )
    expect(refused).toBeInstanceOf(HostplaneError)
    expect(refused).toMatchObject({ status: 404, code: "not_found" })
    const invalid = await ada.projects
      .create({ params: { orgSlug: personal.slug }, payload: { name: "Not A Slug" as never } })
      .then(
        () => undefined,
        (error: unknown) => error
      )
    expect(invalid).toBeInstanceOf(Error)
  })

  it("the Effect client fails with core's own tagged errors", async () => {
    const ada = hostplane.asUserEffect({ provider: "host", subject: "7" })
    const error = await Effect.runPromise(
      Effect.flip(ada.projects.get({ params: { orgSlug: "nobody-has-this", projectName: "x" } }))
    )
    expect(error).toBeInstanceOf(Errors.NotFound)
    const orgs = await Effect.runPromise(ada.orgs.list())
    expect(orgs.items.length).toBeGreaterThanOrEqual(1)
  })

  it("an in-process call cannot be made as a malformed identity", async () => {
    expect(() => hostplane.asUser({ provider: "", subject: "7" })).toThrow()
  })
})
