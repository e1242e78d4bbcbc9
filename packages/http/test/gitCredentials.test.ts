import { Git, Kernel } from "@hostplane/core"
import { Effect, Option } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { generateKey, removeGeneratedKeys } from "./support/SshKeys.ts"
import { logCapture, unique, useSuite } from "./support/TestServer.ts"

// The ssh-keygen folders this file made.
afterAll(removeGeneratedKeys)

describe.each(backends)("spec 4.12 access tokens and SSH keys (%s)", (_name, stores) => {
  const { lines: logs, layer: captureLogs } = logCapture()
  const suite = useSuite(stores, {}, captureLogs)
  const { api } = suite

  const signIn = () => api.login(unique("user"))

  it("POST /v1/me/tokens is 201 with svc_pat_ and 32 random bytes shown once (no-store); only its hash is stored or listed", async () => {
    const user = await signIn()
    const created = await api.post("/v1/me/tokens", { name: "ci" }, { token: user.token })
    expect(created.status).toBe(201)
    expect(created.headers.get("cache-control")).toBe("no-store")
    expect(Object.keys(created.body).sort()).toEqual(["createdAt", "expiresAt", "id", "name", "token"])
    expect(created.body).toMatchObject({ name: "ci", expiresAt: null })
    expect(created.body.id).toMatch(/^pat_/)
    expect(created.body.token).toMatch(/^svc_pat_[A-Za-z0-9_-]{43}$/)
    const list = await api.get("/v1/me/tokens", { token: user.token })
    expect(list.status).toBe(200)
    expect(list.body).toEqual({
      items: [
        {
          id: created.body.id,
          name: "ci",
          createdAt: created.body.createdAt,
          expiresAt: null,
          lastUsedAt: null,
          revokedAt: null
        }
      ]
    })
    const stored = await suite.server.run(
      Effect.flatMap(Git.CredentialStore, (store) => store.listTokens(Kernel.makeId("usr", user.userId)))
    )
    expect(JSON.stringify(stored)).not.toContain(created.body.token)
    expect(stored[0]!.tokenHash).toMatch(/^[0-9a-f]{64}$/)
    expect(JSON.stringify(logs)).not.toContain(created.body.token)
  })

  it("a token is an API bearer token with its user's roles; lastUsedAt is set on use; revoking is 204 with immediate effect", async () => {
    const user = await signIn()
    const { body: created } = await api.post("/v1/me/tokens", { name: "ci" }, { token: user.token })
    const me = await api.get("/v1/me", { token: created.token })
    expect(me.status).toBe(200)
    expect(me.body.user.id).toBe(user.userId)
    const [listed] = (await api.get("/v1/me/tokens", { token: user.token })).body.items
    expect(listed.lastUsedAt).not.toBeNull()
    // Written at most once a minute: a second use right after leaves it as it was.
    expect((await api.get("/v1/me", { token: created.token })).status).toBe(200)
    const [reused] = (await api.get("/v1/me/tokens", { token: user.token })).body.items
    expect(reused.lastUsedAt).toBe(listed.lastUsedAt)
    expect((await api.delete(`/v1/me/tokens/${created.id}`, undefined, { token: user.token })).status).toBe(204)
    const refused = await api.get("/v1/me", { token: created.token })
    expect(refused.status).toBe(401)
    expect(refused.body.code).toBe("unauthorized")
    const [revoked] = (await api.get("/v1/me/tokens", { token: user.token })).body.items
    expect(revoked.revokedAt).not.toBeNull()
    expect((await api.delete(`/v1/me/tokens/${created.id}`, undefined, { token: user.token })).status).toBe(204)
    const [again] = (await api.get("/v1/me/tokens", { token: user.token })).body.items
    expect(again.revokedAt).toBe(revoked.revokedAt)
  })

  it("revoking an unknown token, or another user's, is 404; the other user's token keeps working", async () => {
    const [alice, bob] = [await signIn(), await signIn()]
    const { body: created } = await api.post("/v1/me/tokens", { name: "ci" }, { token: alice.token })
    expect((await api.delete("/v1/me/tokens/pat_unknown", undefined, { token: alice.token })).body.code).toBe(
      "not_found"
    )
    const foreign = await api.delete(`/v1/me/tokens/${created.id}`, undefined, { token: bob.token })
    expect([foreign.status, foreign.body.code]).toEqual([404, "not_found"])
    expect((await api.get("/v1/me", { token: created.token })).status).toBe(200)
    expect((await api.get("/v1/me/tokens", { token: bob.token })).body.items).toEqual([])
  })

  it("token create: name 1..100 and a future expiresAt, else 400; an expired token is refused", async () => {
    const user = await signIn()
    for (const body of [
      {},
      { name: "" },
      { name: "x".repeat(101) },
      { name: "t", expiresAt: "2001-01-01T00:00:00Z" },
      { name: "t", expiresAt: "soon" }
    ]) {
      const reply = await api.post("/v1/me/tokens", body, { token: user.token })
      expect([reply.status, reply.body.code], JSON.stringify(body)).toEqual([400, "bad_request"])
    }
    const later = new Date(Date.now() + 3_600_000).toISOString()
    const ok = await api.post("/v1/me/tokens", { name: "x".repeat(100), expiresAt: later }, { token: user.token })
    expect(ok.status).toBe(201)
    expect(ok.body.expiresAt).toBe(later)
    const token = `${Git.accessTokenPrefix}${unique("expired")}`
    await suite.server.run(
      Effect.gen(function* () {
        const tokens = yield* Kernel.Tokens
        yield* (yield* Git.CredentialStore).insertToken({
          id: Kernel.makeId("pat", unique("pat")),
          userId: Kernel.makeId("usr", user.userId),
          name: "old",
          tokenHash: yield* tokens.hash(token),
          createdAt: "2020-01-01T00:00:00.000Z",
          expiresAt: "2020-02-01T00:00:00.000Z",
          lastUsedAt: null,
          revokedAt: null
        })
      })
    )
    expect((await api.get("/v1/me", { token })).status).toBe(401)
  })

  it("token expiresAt is an RFC 3339 time with its offset: none, a date alone or a day that does not exist is 400; an offset is the same instant in UTC", async () => {
    const user = await signIn()
    for (const expiresAt of [
      "2099-01-01T00:00:00",
      "2099-01-01",
      "2099-02-30T00:00:00Z",
      "2099-01-01T24:00:00Z",
      "2099-01-01T00:00:00+24:00",
      "2099-01-01 00:00:00Z",
      "Thu, 01 Jan 2099 00:00:00 GMT"
    ]) {
      const reply = await api.post("/v1/me/tokens", { name: "t", expiresAt }, { token: user.token })
      expect([reply.status, reply.body.code], expiresAt).toEqual([400, "bad_request"])
    }
    for (const [expiresAt, utc] of [
      ["2099-01-01T02:00:00+02:00", "2099-01-01T00:00:00.000Z"],
      ["2099-01-01t00:00:00.5z", "2099-01-01T00:00:00.500Z"],
      ["2096-02-29T23:30:00-00:30", "2096-03-01T00:00:00.000Z"]
    ] as const) {
      const reply = await api.post("/v1/me/tokens", { name: "t", expiresAt }, { token: user.token })
      expect([reply.status, reply.body.expiresAt], expiresAt).toEqual([201, utc])
    }
    const listed = (await api.get("/v1/me/tokens", { token: user.token })).body.items
    expect(listed.map((token: { expiresAt: string }) => token.expiresAt)).toEqual([
      "2099-01-01T00:00:00.000Z",
      "2099-01-01T00:00:00.500Z",
      "2096-03-01T00:00:00.000Z"
    ])
  })

  it("a token name and a key title are names people read: control characters and bidi overrides are 400, as for an org's name; a key comment's become spaces in the default title", async () => {
    const user = await signIn()
    const [key, commented] = await Promise.all([generateKey("ed25519"), generateKey("ed25519")])
    for (const name of ["ci\nprod", "a\u001b[31mred", "x\u202etxt.exe", "tab\there", "\u0085"]) {
      const token = await api.post("/v1/me/tokens", { name }, { token: user.token })
      expect([token.status, token.body.code], JSON.stringify(name)).toEqual([400, "bad_request"])
      const titled = await api.post("/v1/me/ssh-keys", { publicKey: key.publicKey, title: name }, { token: user.token })
      expect([titled.status, titled.body.code], JSON.stringify(name)).toEqual([400, "bad_request"])
    }
    expect((await api.get("/v1/me/tokens", { token: user.token })).body.items).toEqual([])
    expect((await api.get("/v1/me/ssh-keys", { token: user.token })).body.items).toEqual([])
    const [type, blob] = commented.publicKey.split(" ")
    const added = await api.post(
      "/v1/me/ssh-keys",
      { publicKey: `${type} ${blob} me@laptop\u001b[2J\tcleared` },
      { token: user.token }
    )
    expect([added.status, added.body.title]).toEqual([201, "me@laptop [2J cleared"])
    expect((await api.post("/v1/me/tokens", { name: "CI – déploiement ✓" }, { token: user.token })).status).toBe(201)
  })

  it("every /v1/me/tokens and /v1/me/ssh-keys route without a session is 401", async () => {
    const key = await generateKey("ed25519")
    const replies = [
      await api.get("/v1/me/tokens"),
      await api.post("/v1/me/tokens", { name: "x" }),
      await api.delete("/v1/me/tokens/pat_x"),
      await api.get("/v1/me/ssh-keys"),
      await api.post("/v1/me/ssh-keys", { publicKey: key.publicKey }),
      await api.delete("/v1/me/ssh-keys/key_x")
    ]
    expect(replies.map((reply) => reply.status)).toEqual([401, 401, 401, 401, 401, 401])
  })

  it("POST /v1/me/ssh-keys: every allowed type is 201 with the fingerprint ssh-keygen -lf prints; title defaults to the comment", async () => {
    const kinds = [
      ["ed25519", undefined, "ed25519"],
      ["ecdsa", 256, "ecdsa-sha2-nistp256"],
      ["ecdsa", 384, "ecdsa-sha2-nistp384"],
      ["ecdsa", 521, "ecdsa-sha2-nistp521"],
      ["rsa", 2048, "rsa"]
    ] as const
    // Keys first, made in parallel: ssh-keygen for five types takes seconds on a loaded machine.
    const keys = await Promise.all(
      kinds.map(async ([type, bits, spelled]) => ({
        spelled,
        key: await generateKey(type, { ...(bits === undefined ? {} : { bits }), comment: `${spelled}@laptop` })
      }))
    )
    const extra = await generateKey("ed25519")
    const user = await signIn()
    const added = []
    for (const { spelled, key } of keys) {
      const reply = await api.post("/v1/me/ssh-keys", { publicKey: key.publicKey }, { token: user.token })
      expect(reply.status, spelled).toBe(201)
      expect(Object.keys(reply.body).sort()).toEqual(["createdAt", "fingerprint", "id", "title", "type"])
      expect(reply.body).toMatchObject({ type: spelled, fingerprint: key.fingerprint, title: `${spelled}@laptop` })
      expect(reply.body.id).toMatch(/^key_/)
      added.push(reply.body)
    }
    const titled = await api.post(
      "/v1/me/ssh-keys",
      { publicKey: extra.publicKey, title: "Work laptop" },
      { token: user.token }
    )
    expect(titled.body.title).toBe("Work laptop")
    const list = await api.get("/v1/me/ssh-keys", { token: user.token })
    expect(list.body.items).toEqual([...added, titled.body])
  })

  it("DSA, RSA under 2048 bits, a line with options, a private key or garbage is 400", async () => {
    const ed = await generateKey("ed25519")
    const [dsa, shortRsa] = await Promise.all([generateKey("dsa"), generateKey("rsa", { bits: 1024 })])
    const user = await signIn()
    const lines = [
      dsa.publicKey,
      shortRsa.publicKey,
      `no-pty,command="/bin/sh" ${ed.publicKey}`,
      `${ed.publicKey}\n${ed.publicKey}`,
      (await import("node:fs")).readFileSync(ed.file, "utf8"),
      "ssh-ed25519 not-base64!",
      "hello"
    ]
    for (const publicKey of lines) {
      const reply = await api.post("/v1/me/ssh-keys", { publicKey }, { token: user.token })
      expect([reply.status, reply.body.code], publicKey.slice(0, 40)).toEqual([400, "bad_request"])
    }
    expect((await api.get("/v1/me/ssh-keys", { token: user.token })).body.items).toEqual([])
  })

  it("a fingerprint is globally unique: 409 ssh_key_exists for anyone; deletion is 204 at once and the key may be added again", async () => {
    const key = await generateKey("ed25519")
    const [alice, bob] = [await signIn(), await signIn()]
    const first = await api.post("/v1/me/ssh-keys", { publicKey: key.publicKey }, { token: alice.token })
    for (const who of [alice, bob]) {
      const reply = await api.post(
        "/v1/me/ssh-keys",
        { publicKey: `${key.publicKey.split(" ").slice(0, 2).join(" ")} other` },
        { token: who.token }
      )
      expect([reply.status, reply.body.code]).toEqual([409, "ssh_key_exists"])
    }
    expect((await api.delete(`/v1/me/ssh-keys/${first.body.id}`, undefined, { token: bob.token })).status).toBe(404)
    expect((await api.delete(`/v1/me/ssh-keys/${first.body.id}`, undefined, { token: alice.token })).status).toBe(204)
    expect((await api.delete(`/v1/me/ssh-keys/${first.body.id}`, undefined, { token: alice.token })).status).toBe(404)
    const owner = await suite.server.run(Effect.flatMap(Git.SshKeys, (keys) => keys.ownerOf(key.fingerprint)))
    expect(Option.isNone(owner)).toBe(true)
    const readded = await api.post("/v1/me/ssh-keys", { publicKey: key.publicKey }, { token: bob.token })
    expect(readded.status).toBe(201)
  })
})
