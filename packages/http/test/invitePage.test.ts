import { type Kernel, Mail, Orgs } from "@hostplane/core"
import { layerMemory } from "@hostplane/testkit"
import { Effect, Layer, Option } from "effect"
import { describe, expect, it } from "vitest"
import { logCapture, unique, useSuite } from "./support/TestServer.ts"

describe("the invitation link <public url>/invites/<token> resolves to a page", () => {
  const logs = logCapture()
  const suite = useSuite(() => Layer.fresh(layerMemory), {}, logs.layer)
  const { api } = suite

  /** The link of the queued invitation mail, and its path on the test server. */
  const linkOf = async (slug: string, inviteId: Kernel.InviteId) => {
    const mail = await suite.server.run(
      Effect.gen(function* () {
        const store = yield* Orgs.OrgStore
        const org = Option.getOrThrow(yield* store.findBySlug(slug))
        const invite = Option.getOrThrow(yield* store.findInvite(org.id, inviteId))
        return Option.getOrThrow(yield* (yield* Mail.MailOutbox).get(invite.mailId!))
      })
    )
    const link = /http:\/\/localhost:8080(\/invites\/([A-Za-z0-9_-]{43}))/.exec(mail.text)!
    return { path: link[1]!, token: link[2]! }
  }

  const page = async (path: string) => {
    const response = await fetch(`${suite.server.url}${path}`)
    return { status: response.status, headers: response.headers, html: await response.text() }
  }

  it("shows the org name (escaped), role, state and expiry of a pending invite, with an accept button", async () => {
    const name = `Acme <img src=x onerror=alert(1)> & "Co" 'x'`
    const slug = await suite.newOrg(name)
    const created = await api.post(
      `/v1/orgs/${slug}/invites`,
      { email: "new@example.test", role: "viewer" },
      {
        token: suite.admin.token
      }
    )
    const { path, token } = await linkOf(slug, created.body.inviteId)
    const reply = await page(path)
    expect(reply.status).toBe(200)
    expect(reply.headers.get("content-type")).toBe("text/html; charset=utf-8")
    expect(reply.html).toContain("Acme &#60;img src=x onerror=alert(1)&#62; &#38; &#34;Co&#34; &#39;x&#39;")
    expect(reply.html).not.toContain("<img")
    expect(reply.html).toContain(`(${slug})`)
    expect(reply.html).toContain("<dd>viewer</dd>")
    expect(reply.html).toContain("Waiting for you to accept")
    expect(reply.html).toContain('<button id="accept" hidden>Accept invitation</button>')
    // The dev login is on in tests: the page offers it; the accept call is the API's own.
    expect(reply.html).toContain('id="dev-sign-in"')
    expect(reply.html).toContain('"/v1/invites/" + encodeURIComponent(data.token) + "/accept"')
    expect(reply.html).toContain(`{"token":"${token}","state":"pending"}`)
  })

  it("is self-contained under a nonce CSP, never cached, never framed, and sends no referrer", async () => {
    const slug = await suite.newOrg()
    const created = await api.post(
      `/v1/orgs/${slug}/invites`,
      { email: "csp@example.test", role: "member" },
      {
        token: suite.admin.token
      }
    )
    const reply = await page((await linkOf(slug, created.body.inviteId)).path)
    const csp = reply.headers.get("content-security-policy")!
    const nonce = /script-src 'nonce-([0-9a-f]{32})'/.exec(csp)![1]!
    expect(csp).toContain("default-src 'none'")
    expect(csp).toContain("connect-src 'self'")
    expect(csp).toContain("frame-ancestors 'none'")
    expect(reply.html.match(/<script nonce="([0-9a-f]+)">/g)).toEqual([`<script nonce="${nonce}">`])
    expect(reply.html).toContain(`<style nonce="${nonce}">`)
    expect(reply.html).not.toMatch(/(src|href)="https?:/)
    expect(reply.headers.get("cache-control")).toBe("no-store")
    expect(reply.headers.get("referrer-policy")).toBe("no-referrer")
    expect(reply.headers.get("x-frame-options")).toBe("DENY")
    expect(reply.headers.get("x-content-type-options")).toBe("nosniff")
    // A second load gets a fresh nonce.
    const again = await page((await linkOf(slug, created.body.inviteId)).path)
    expect(again.headers.get("content-security-policy")).not.toBe(csp)
  })

  it("a revoked invite says so and offers no accept; an accepted one says it was accepted", async () => {
    const slug = await suite.newOrg()
    const revoked = await api.post(
      `/v1/orgs/${slug}/invites`,
      { email: "gone@example.test", role: "member" },
      {
        token: suite.admin.token
      }
    )
    const link = await linkOf(slug, revoked.body.inviteId)
    await api.delete(`/v1/orgs/${slug}/invites/${revoked.body.inviteId}`, undefined, { token: suite.admin.token })
    const reply = await page(link.path)
    expect(reply.status).toBe(200)
    expect(reply.html).toContain("Revoked by an admin")
    expect(reply.html).toContain('"state":"revoked"')
    const taken = await api.post(
      `/v1/orgs/${slug}/invites`,
      { email: "taken@example.test", role: "member" },
      {
        token: suite.admin.token
      }
    )
    const accepted = await linkOf(slug, taken.body.inviteId)
    const joiner = await api.login(unique("joiner"))
    expect((await api.post(`/v1/invites/${accepted.token}/accept`, undefined, { token: joiner.token })).status).toBe(
      200
    )
    expect((await page(accepted.path)).html).toContain("Already accepted")
  })

  it("an unknown token is a 404 page; the token never reaches the log", async () => {
    const token = "Zm9yZ2VkLWludml0ZS10b2tlbi1ub3QtcmVhbC0xMjM0NTY"
    const reply = await page(`/invites/${token}`)
    expect(reply.status).toBe(404)
    expect(reply.headers.get("content-type")).toBe("text/html; charset=utf-8")
    expect(reply.html).toContain("Invitation not found")
    expect(reply.html).not.toContain(token)
    expect(logs.lines.join("\n")).not.toContain(token)
    expect(logs.lines.some((line) => line.includes('"path":"/invites/***"'))).toBe(true)
  })
})
