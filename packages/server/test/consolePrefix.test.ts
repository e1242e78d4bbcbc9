import { TestDatabase } from "@hostplane/adapters-pg/testing/TestDatabase"
import type { Mounted } from "@hostplane/http"
import { Effect, ManagedRuntime, Redacted } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type BrowserContext, chromium, type Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ensureBuilt } from "../../console/test/support/build.ts"
import { makeHostplane } from "../src/Hostplane.ts"

const chromiumPath = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium"

/** How long a click may take to land on its page: a loaded machine took over the 1 s `expect.poll` gives by default. */
const navigation = { timeout: 20_000 }

/** The host's own sessions: its cookie `sid` names one of its users. */
const hostSessions = new Map([["s-ada", { id: 41, email: "ada@host.test" }]])

describe("the console under an embedding host's prefix, in Chromium", () => {
  const database = ManagedRuntime.make(TestDatabase.layerBare)
  let hostplane: Mounted<unknown> | undefined
  let server: Http.Server
  let base = ""
  let dataDir = ""
  let profile = ""
  let context: BrowserContext
  /** What went wrong in the pages: errors, failed loads, and any file or page answered 4xx/5xx. */
  const problems: Array<string> = []
  /** The API's refusals, kept apart: some are the answer a test expects. */
  const refusals: Array<string> = []

  const tab = async (): Promise<Page> => {
    const page = await context.newPage()
    page.on("console", (message) => {
      // Chromium logs every 4xx/5xx as "Failed to load resource"; those are sorted below by URL.
      if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) {
        problems.push(`${page.url()}: ${message.text()}`)
      }
    })
    page.on("pageerror", (error) => problems.push(`${page.url()}: ${error.message}`))
    page.on("requestfailed", (request) => {
      // A reload or a navigation aborts the page's calls still in flight: the test's doing, not a failure.
      if (request.failure()?.errorText !== "net::ERR_ABORTED") {
        problems.push(`${request.url()}: ${request.failure()?.errorText}`)
      }
    })
    page.on("response", (response) => {
      if (response.status() < 400) return
      const path = new URL(response.url()).pathname
      ;(path.startsWith("/platform/v1/") ? refusals : problems).push(`${path}: ${response.status()}`)
    })
    return page
  }

  beforeAll(async () => {
    ensureBuilt()
    // The host's server: its own pages, hostplane under /platform.
    server = Http.createServer((request, response) => {
      if (hostplane === undefined) return void response.writeHead(503).end()
      hostplane.listener(request, response, () =>
        response.writeHead(404, { "content-type": "text/plain" }).end("the host's own 404")
      )
    })
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    dataDir = mkdtempSync(join(tmpdir(), "hostplane-console-prefix-"))
    const { url } = await database.runPromise(Effect.service(TestDatabase))
    hostplane = (await makeHostplane({
      database: { url: Redacted.value(url) },
      prefix: "/platform",
      dataDir,
      jobs: false,
      settings: { settings: { publicUrl: `${base}/platform` }, identity: { devAuth: true } },
      authenticate: ({ cookies }) => {
        const user = hostSessions.get(cookies["sid"] ?? "")
        return user === undefined ? undefined : { provider: "host", subject: String(user.id), email: user.email }
      }
    })) as Mounted<unknown>
    profile = mkdtempSync(join(tmpdir(), "hostplane-console-prefix-profile-"))
    context = await chromium.launchPersistentContext(profile, {
      executablePath: chromiumPath,
      headless: true,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
      viewport: { width: 1280, height: 900 }
    })
  }, 300_000)

  afterAll(async () => {
    await context?.close()
    server?.closeAllConnections()
    await new Promise((resolve) => server?.close(resolve))
    await hostplane?.dispose()
    await database.dispose()
    for (const dir of [dataDir, profile]) if (dir !== "") rmSync(dir, { recursive: true, force: true })
  }, 120_000)

  it("serves the console's pages and files under the prefix only, its index naming them there", async () => {
    for (const path of ["/platform/", "/platform/console/", "/platform/orgs/acme/projects/site"]) {
      const reply = await fetch(`${base}${path}`)
      expect(reply.status, path).toBe(200)
      expect(reply.headers.get("content-security-policy")).toContain("script-src 'self'")
      const html = await reply.text()
      expect(html).toContain('<meta name="hostplane-base" content="/platform" />')
      expect(html).toContain('<meta name="hostplane-host-login" content="on" />')
      // Every file the index loads is under the prefix, and is served there.
      const files = [...html.matchAll(/(?:src|href)="(\/[^"]*)"/g)].map((match) => match[1]!)
      expect(files.length).toBeGreaterThan(0)
      for (const file of files) {
        expect(file.startsWith("/platform/console/assets/"), file).toBe(true)
        expect((await fetch(`${base}${file}`)).status, file).toBe(200)
      }
    }
    // Outside the prefix, the host answers: the console takes none of its URLs.
    for (const path of ["/", "/console/", "/orgs/acme"]) {
      expect(await (await fetch(`${base}${path}`)).text(), path).toBe("the host's own 404")
    }
  })

  it("a host user signed in by the host's cookie uses it at /platform/console/: pages, links and reloads stay under it", async () => {
    await context.addCookies([{ name: "sid", value: "s-ada", url: base }])
    const page = await tab()
    await page.goto(`${base}/platform/console/`)
    await page.getByRole("heading", { level: 1, name: "Your orgs" }).waitFor()
    await expect.poll(() => page.url(), navigation).toBe(`${base}/platform/`)
    await page.getByLabel("Name").fill("Prefixed")
    await page.getByRole("button", { name: "Create org" }).click()
    await expect.poll(() => page.url(), navigation).toBe(`${base}/platform/orgs/prefixed`)
    await page.getByText("No project yet").waitFor()
    await page.getByLabel("Name").fill("site")
    await page.getByRole("button", { name: "Create project" }).click()
    await expect.poll(() => page.url(), navigation).toBe(`${base}/platform/orgs/prefixed/projects/site`)
    await page.getByRole("heading", { level: 1, name: "site" }).waitFor()
    // A link of the console's own navigation, then a reload of that deep URL.
    await page.getByRole("link", { name: "Secrets" }).click()
    await expect.poll(() => page.url(), navigation).toBe(`${base}/platform/orgs/prefixed/projects/site/secrets`)
    await page.getByRole("heading", { level: 1, name: "Secrets" }).waitFor()
    await page.reload()
    await page.getByRole("heading", { level: 1, name: "Secrets" }).waitFor()
    await page.getByRole("link", { name: "Account" }).click()
    await expect.poll(() => page.url(), navigation).toBe(`${base}/platform/account`)
    // The host signs its users out itself: the console offers no sign-out of its own for them.
    expect(await page.getByRole("button", { name: "Sign out" }).count()).toBe(0)
    // What the pages did is the host user's, through hostplane's API under the prefix.
    const ada = hostplane!.asUser({ provider: "host", subject: "41" })
    const orgs = await ada.orgs.list({})
    expect(orgs.items.map((org) => org.slug)).toContain("prefixed")
    expect(problems).toEqual([])
    expect(refusals).toEqual([])
    await page.close()
  })

  it("without the host's cookie, the dev login signs in on the same page, under the prefix", async () => {
    await context.clearCookies()
    problems.length = 0
    refusals.length = 0
    const page = await tab()
    await page.goto(`${base}/platform/orgs/prefixed`)
    await page.getByRole("heading", { level: 1, name: "Sign in to hostplane" }).waitFor()
    await page.getByLabel("Subject").fill("dev-grace")
    await page.getByRole("button", { name: "Dev sign-in" }).click()
    // Grace is no member of Ada's org: the org page answers her as the API does, at the same address.
    await expect.poll(() => page.url(), navigation).toBe(`${base}/platform/orgs/prefixed`)
    await page.getByRole("link", { name: "hostplane" }).click()
    await expect.poll(() => page.url(), navigation).toBe(`${base}/platform/`)
    await page.getByRole("heading", { level: 1, name: "Your orgs" }).waitFor()
    expect(problems).toEqual([])
    // Asked whether the host signs this tab in (no: 401), then Grace's refusal of Ada's org (404, as for any outsider).
    expect(refusals[0]).toBe("/platform/v1/me: 401")
    expect(refusals.slice(1).every((refusal) => refusal.startsWith("/platform/v1/orgs/prefixed"))).toBe(true)
    await page.close()
  })
})
