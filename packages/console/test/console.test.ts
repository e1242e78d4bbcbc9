import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { bundleOf, manifestEntry } from "@hostplane/testkit"
import { Effect } from "effect"
import { type BrowserContext, chromium, type Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { signIn, startOnData, stopServer } from "../../server/test/support/ServerProcess.ts"
import { ensureBuilt } from "./support/build.ts"

const chromiumPath = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium"
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8")
/** Screenshots of the main pages: a CI artifact (the folder is printed); two of them are in docs/. */
export const screenshots = mkdtempSync(join(tmpdir(), "hostplane-console-screenshots-"))

let base = ""
let server: Awaited<ReturnType<typeof startOnData>> | undefined
let dataDir = ""
let profile = ""
let context: BrowserContext
const problems: Array<string> = []

/** A tab that records every console error and uncaught exception of the page. */
const tab = async (): Promise<Page> => {
  const page = await context.newPage()
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`${page.url()}: ${message.text()}`)
  })
  page.on("pageerror", (error) => problems.push(`${page.url()}: ${error.message}`))
  return page
}

/**
 * axe-core in each document the tab loads from now on, given through the DevTools protocol so the page's CSP
 * (script-src 'self') stays as served; the browser compiles it once for all of them, where an evaluate per page
 * compiled its 550 KB again each time.
 */
const withAxe = async (page: Page) => {
  await page.addInitScript(axeSource)
  return page
}

/** axe-core in the page as it is (a tab `withAxe`): no violation of impact serious or critical. */
const accessible = async (page: Page) => {
  const violations = (await page.evaluate(
    `axe.run(document, { resultTypes: ["violations"] }).then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(" ")) })))`
  )) as Array<{ id: string; impact: string; nodes: Array<string> }>
  return violations.filter((violation) => violation.impact === "serious" || violation.impact === "critical")
}

const deploy = async (token: string, org: string, project: string, text: string) => {
  const body = await Effect.runPromise(
    bundleOf([
      manifestEntry({ name: project }),
      { name: "assets/", type: "directory" },
      { name: "assets/index.html", content: `<!doctype html><h1>${text}</h1>` }
    ])
  )
  const reply = await fetch(`${base}/v1/orgs/${org}/projects/${project}/deployments`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/gzip" },
    body
  })
  expect(reply.status, await reply.clone().text()).toBe(201)
  return (await reply.json()) as { id: string; version: number }
}

const heading = (page: Page, text: string | RegExp) => page.getByRole("heading", { level: 1, name: text })

/** A tab signed in as `from` is: the session is per tab (sessionStorage), so it is put there before the app runs. */
const signedInTab = async (from: Page) => {
  const session = await from.evaluate(() => sessionStorage.getItem("hostplane.session"))
  const page = await tab()
  await page.addInitScript((value) => {
    if (value !== null && sessionStorage.getItem("hostplane.session") === null)
      sessionStorage.setItem("hostplane.session", value)
  }, session)
  return page
}

/**
 * Runs `check` on every path, in the given tabs at once: each tab takes the next path when it is done, so one page's
 * loads and quiet-network wait overlap another's work.
 */
const eachPath = async (
  paths: ReadonlyArray<string>,
  tabs: ReadonlyArray<Page>,
  check: (page: Page, path: string) => Promise<void>
) => {
  const queue = [...paths]
  await Promise.all(
    tabs.map(async (page) => {
      for (let path = queue.shift(); path !== undefined; path = queue.shift()) await check(page, path)
    })
  )
}

describe("the web console in Chromium, against the server as npm start runs it", () => {
  beforeAll(async () => {
    ensureBuilt()
    dataDir = mkdtempSync(join(tmpdir(), "hostplane-console-data-"))
    server = await startOnData(dataDir, {}, 480)
    base = server.base
    profile = mkdtempSync(join(tmpdir(), "hostplane-console-profile-"))
    context = await chromium.launchPersistentContext(profile, {
      executablePath: chromiumPath,
      headless: true,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-sync"
      ],
      viewport: { width: 1280, height: 900 }
    })
  }, 300_000)

  afterAll(async () => {
    await context?.close()
    await stopServer(server?.child, "SIGTERM")
    for (const dir of [dataDir, profile]) if (dir !== "") rmSync(dir, { recursive: true, force: true })
    console.info(`console screenshots: ${screenshots}`)
  }, 120_000)

  let admin: Awaited<ReturnType<typeof signIn>>
  let page: Page
  const org = "console-e2e"
  const project = "site"

  it("serves the console at / with its CSP and the dev login announced, hashed files immutable", async () => {
    const reply = await fetch(`${base}/orgs/anything/projects/x/secrets`)
    expect(reply.status).toBe(200)
    const csp = reply.headers.get("content-security-policy") ?? ""
    expect(csp).toContain("script-src 'self'")
    expect(csp).toContain("connect-src 'self'")
    expect(csp).toContain("frame-ancestors 'none'")
    const html = await reply.text()
    expect(html).toContain('<meta name="hostplane-dev-login" content="on" />')
    // No inline script: every script has a src under /console/.
    expect([...html.matchAll(/<script([^>]*)>/g)].every((m) => /src="\/console\//.test(m[1]!))).toBe(true)
    const asset = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)![1]!
    const file = await fetch(`${base}${asset}`)
    expect(file.status).toBe(200)
    expect(file.headers.get("cache-control")).toBe("public, max-age=31536000, immutable")
    expect((await fetch(`${base}/console/assets/nope.js`)).status).toBe(404)
    expect((await fetch(`${base}/v1/nope`)).status).toBe(404)
  })

  it("signs in through the fragment, which leaves the address bar at once; the session is only in sessionStorage", async () => {
    admin = await signIn(base, "console-admin")
    const login = await fetch(`${base}/v1/auth/dev/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ subject: "console-admin" })
    }).then((r) => r.json() as Promise<{ token: string; expiresAt: string; userId: string; subject: string }>)
    admin = { ...admin, token: login.token }
    page = await tab()
    const fragment = new URLSearchParams(login as unknown as Record<string, string>).toString()
    await page.goto(`${base}/#${fragment}`)
    await expect.poll(() => page.url()).toBe(`${base}/`)
    await heading(page, "Your orgs").waitFor()
    const storage = await page.evaluate(() => ({
      session: sessionStorage.getItem("hostplane.session"),
      local: Object.keys(localStorage)
    }))
    expect(JSON.parse(storage.session!).token).toBe(login.token)
    expect(storage.local).toEqual([])
  })

  it("creates an org and a project from the pages, with the names of decisions.md part 14", async () => {
    await page.getByLabel("Name").fill(org)
    await page.getByRole("button", { name: "Create org" }).click()
    await expect.poll(() => page.url()).toBe(`${base}/orgs/${org}`)
    await page.getByText("No project yet").waitFor()
    // The CLI is not on the public registry: `npx hostplane` would run whatever package holds that name there.
    expect(await page.locator("pre", { hasText: "deploy" }).innerText()).toBe(
      `hostplane deploy ./site --org ${org} --project my-site`
    )
    await page.getByLabel("Name").fill(project)
    await page.getByRole("button", { name: "Create project" }).click()
    await expect.poll(() => page.url()).toBe(`${base}/orgs/${org}/projects/${project}`)
    await heading(page, project).waitFor()
    await page.getByText("Nothing is live yet").waitFor()
    expect(await page.locator("pre", { hasText: "deploy" }).innerText()).toBe(
      `hostplane deploy ./site --org ${org} --project ${project}`
    )
  })

  it("shows a deployment made through the API, live by itself, and rolls back through the dialog naming the version", async () => {
    // The page's own clock, still running at its pace, which the test can move ahead (the context's pages share it);
    // the page is loaded again so its poll runs on that clock.
    await page.clock.install()
    await page.reload()
    await page.getByText("Nothing is live yet").waitFor()
    await deploy(admin.token, org, project, "one")
    await deploy(admin.token, org, project, "two")
    // The project page polls (every 5 s): the deployments appear without a reload, at the next poll, which the page's
    // clock reaches at once.
    await page.clock.fastForward(5_000)
    await page.getByText("v2", { exact: false }).first().waitFor({ timeout: 30_000 })
    await page.screenshot({ path: join(screenshots, "project.png"), fullPage: true })
    await page.getByRole("button", { name: "Rollback" }).first().click()
    const dialog = page.getByRole("dialog")
    await dialog.getByRole("heading", { name: "Roll back to version 1?" }).waitFor()
    await dialog.getByRole("button", { name: "Rollback" }).click()
    await dialog.waitFor({ state: "detached" })
    const overview = await admin.call("GET", `/v1/orgs/${org}/projects/${project}/overview`)
    expect(overview.body.serving.deployment.version).toBe(1)
    await page.getByRole("definition").filter({ hasText: /^v1/ }).first().waitFor()
  })

  it("adds a secret and deletes it through the in-page confirmation", async () => {
    await page.getByRole("link", { name: "Secrets" }).click()
    await heading(page, "Secrets").waitFor()
    await page.getByLabel("Name").fill("API_KEY")
    await page.getByLabel("Value").fill("s3cret-value")
    await page.getByRole("button", { name: "Add secret" }).click()
    await page.getByRole("cell", { name: "API_KEY" }).waitFor()
    expect(await page.content()).not.toContain("s3cret-value")
    await page.screenshot({ path: join(screenshots, "secrets.png"), fullPage: true })
    await page.getByRole("button", { name: "Delete" }).click()
    await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click()
    await page.getByText("No secret yet").waitFor()
    expect((await admin.call("GET", `/v1/orgs/${org}/projects/${project}/secrets`)).body.items).toEqual([])
  })

  it("shows the API's message and code where an action failed", async () => {
    await page.getByLabel("Name").fill("SERVICE_TOKEN")
    await page.getByLabel("Value").fill("x")
    await page.getByRole("button", { name: "Add secret" }).click()
    await page.getByRole("alert").filter({ hasText: "reserved_name" }).waitFor()
    problems.length = 0
  })

  it("edits a DNS rrset in the zone's editor", async () => {
    await page.goto(`${base}/orgs/${org}/domains`)
    await page.getByLabel("Name").fill("console-e2e.example")
    await page.getByRole("button", { name: "Create zone" }).click()
    await heading(page, "DNS zone console-e2e.example").waitFor()
    await page.getByLabel("Name", { exact: true }).fill("www")
    await page.getByLabel("TTL", { exact: true }).fill("300")
    await page.getByLabel("Records").fill("192.0.2.10")
    await page.getByRole("button", { name: "Save" }).first().click()
    await page.getByRole("cell", { name: "192.0.2.10" }).waitFor()
    await page.getByRole("button", { name: "Edit www A" }).click()
    await page.getByLabel("Records").fill("192.0.2.10\n192.0.2.11")
    await page.getByRole("button", { name: "Save" }).first().click()
    await page.getByRole("cell", { name: /192\.0\.2\.11/ }).waitFor()
    const zone = await admin.call("GET", `/v1/orgs/${org}/dns/zones/console-e2e.example`)
    const www = zone.body.rrsets.find((r: { name: string; type: string }) => r.type === "A" && r.name.startsWith("www"))
    expect(www.records).toEqual(["192.0.2.10", "192.0.2.11"])
    await page.screenshot({ path: join(screenshots, "dns.png"), fullPage: true })
  })

  const pages = () => {
    const p = `/orgs/${org}/projects/${project}`
    return [
      "/",
      "/account",
      `/orgs/${org}`,
      `/orgs/${org}/members`,
      `/orgs/${org}/settings`,
      `/orgs/${org}/domains`,
      `/orgs/${org}/dns/console-e2e.example`,
      p,
      `${p}/deployments`,
      `${p}/logs`,
      `${p}/hostnames`,
      `${p}/secrets`,
      `${p}/addons`,
      `${p}/access`,
      `${p}/repos`,
      `${p}/repos/app`,
      `${p}/repos/app/commits`,
      `${p}/repos/app/ref-updates`
    ]
  }

  it("shows each hostname's HTTPS state beside the DNS records to create", async () => {
    // The page's clock was installed for the deployments' poll above.
    await page.goto(`${base}/orgs/${org}/projects/${project}/hostnames`)
    await heading(page, "Hostnames").waitFor()
    const added = await admin.call("POST", `/v1/orgs/${org}/projects/${project}/hostnames`, {
      name: "www.console-e2e.test"
    })
    expect(added.status).toBe(200)
    // The page polls (every 10 s while every name is active): the new name appears with its TXT record by itself,
    // at the next poll, which the page's clock reaches at once instead of in 10 s.
    const row = page.getByRole("row").filter({ hasText: "www.console-e2e.test" })
    await page.clock.fastForward(10_000)
    await row.getByText("_service-verify.www.console-e2e.test TXT", { exact: false }).waitFor({ timeout: 30_000 })
    await page.getByRole("columnheader", { name: "HTTPS" }).waitFor()
    // This server has no TLS listener, so no name has a certificate: each says so, and none offers a retry.
    expect(await row.getByRole("cell").nth(2).textContent()).toBe("HTTP only")
    expect(await page.getByRole("button", { name: "Retry certificate" }).count()).toBe(0)
  })

  it("loads every page of part 14 after a hard reload with no console error and no serious accessibility violation", async () => {
    expect((await admin.call("POST", `/v1/orgs/${org}/projects/${project}/repos`, { name: "app" })).status).toBe(201)
    const tabs = [await withAxe(page), await withAxe(await signedInTab(page)), await withAxe(await signedInTab(page))]
    problems.length = 0
    const failures: Array<string> = []
    await eachPath(pages(), tabs, async (open, path) => {
      await open.goto(`${base}${path}`)
      await open.reload()
      await open.locator("main h1").first().waitFor()
      await open.waitForLoadState("networkidle")
      expect(await open.locator("main h1").first().textContent(), path).not.toBe("Page not found")
      expect(await open.getByRole("heading", { name: "Sign in to hostplane" }).count(), path).toBe(0)
      expect(open.url()).toBe(`${base}${path}`)
      const violations = await accessible(open)
      if (violations.length > 0) failures.push(`${path}: ${JSON.stringify(violations)}`)
    })
    for (const other of tabs.slice(1)) await other.close()
    expect(failures).toEqual([])
    expect(problems).toEqual([])
  }, 300_000)

  it("a viewer sees no enabled destructive action", async () => {
    const viewer = await signIn(base, "console-viewer")
    expect(
      (
        await admin.call("POST", `/v1/orgs/${org}/members`, {
          provider: "dev",
          subject: "console-viewer",
          role: "viewer"
        })
      ).status
    ).toBe(201)
    const viewerPage = await tab()
    await viewerPage.goto(`${base}/orgs/${org}`)
    // The viewer signs in through the console's own dev login form.
    await viewerPage.getByLabel("Subject").fill("console-viewer")
    await viewerPage.getByRole("button", { name: "Dev sign-in" }).click()
    await heading(viewerPage, "Projects").waitFor()
    void viewer
    const tabs = [viewerPage, await signedInTab(viewerPage), await signedInTab(viewerPage)]
    await eachPath(pages(), tabs, async (open, path) => {
      await open.goto(`${base}${path}`)
      await open.locator("main h1").first().waitFor()
      await open.waitForLoadState("networkidle")
      // Signed in (a tab without the session would show the sign-in page, with no button to check).
      expect(await open.getByRole("heading", { name: "Sign in to hostplane" }).count(), path).toBe(0)
      const destructive = open.getByRole("button", {
        name: /^(Delete|Rollback|Revoke|Create project|Add secret|Add hostname|Grant|Save)$/
      })
      for (const button of await destructive.all())
        expect(await button.isEnabled(), `${path}: ${await button.textContent()}`).toBe(false)
    })
    for (const other of tabs.slice(1)) await other.close()
    await viewerPage.goto(`${base}/orgs/${org}/projects/${project}/deployments`)
    // The action is there, shown disabled: the viewer sees what exists without being offered it.
    const rollback = viewerPage.getByRole("button", { name: "Rollback" }).first()
    await rollback.waitFor()
    expect(await rollback.isEnabled()).toBe(false)
    await viewerPage.close()
  }, 300_000)

  it("opens the invitation link as a console page, signs in there and accepts", { timeout: 120_000 }, async () => {
    expect(
      (await admin.call("POST", `/v1/orgs/${org}/invites`, { email: "friend@example.com", role: "member" })).status
    ).toBe(201)
    // The invitation mail is written as an .eml file under <data dir>/outbox (no mail provider configured).
    const outbox = join(dataDir, "outbox")
    const tokenInMail = () => {
      if (!existsSync(outbox)) return undefined
      for (const file of readdirSync(outbox)) {
        const mail = readFileSync(join(outbox, file), "utf8").replace(/=\r?\n/g, "")
        if (!mail.includes("friend@example.com")) continue
        const found = /\/invites\/([A-Za-z0-9_-]{43})/.exec(mail)
        if (found !== null) return found[1]
      }
      return undefined
    }
    await expect.poll(tokenInMail, { timeout: 60_000 }).toBeDefined()
    const invitee = await withAxe(await tab())
    await invitee.goto(`${base}/invites/${tokenInMail()}`)
    await invitee.reload()
    await invitee.getByText("You are invited to join").waitFor()
    expect(await accessible(invitee)).toEqual([])
    await invitee.getByLabel("Subject").fill("console-friend")
    await invitee.getByRole("button", { name: "Dev sign-in" }).click()
    await invitee.getByRole("button", { name: "Accept invitation" }).click()
    await expect.poll(() => invitee.url()).toBe(`${base}/orgs/${org}`)
    await heading(invitee, "Projects").waitFor()
    expect(await invitee.evaluate(() => Object.keys(localStorage))).toEqual([])
    await invitee.close()
  })

  it("a 401 returns to sign-in on the same page, and sign-in comes back to it", { timeout: 120_000 }, async () => {
    await page.goto(`${base}/orgs/${org}/members`)
    await heading(page, "Members").waitFor()
    await page.screenshot({ path: join(screenshots, "members.png"), fullPage: true })
    await page.evaluate(() => {
      const session = JSON.parse(sessionStorage.getItem("hostplane.session")!)
      sessionStorage.setItem("hostplane.session", JSON.stringify({ ...session, token: "expired" }))
    })
    await page.getByRole("link", { name: "Settings" }).click()
    await page.getByRole("heading", { name: "Sign in to hostplane" }).waitFor()
    expect(page.url()).toBe(`${base}/orgs/${org}/settings`)
    await page.getByLabel("Subject").fill("console-admin")
    await page.getByRole("button", { name: "Dev sign-in" }).click()
    await heading(page, "Settings").waitFor()
    expect(page.url()).toBe(`${base}/orgs/${org}/settings`)
    // The 401 itself is the only console error of this test: the browser reports the refused request.
    problems.length = 0
  })

  it("saves the screenshots (docs/ keeps two of them)", () => {
    mkdirSync(screenshots, { recursive: true })
    if (process.env["HOSTPLANE_UPDATE_DOCS"] === "1") {
      const docs = join(import.meta.dirname, "../../../docs")
      copyFileSync(join(screenshots, "project.png"), join(docs, "console-project.png"))
      copyFileSync(join(screenshots, "dns.png"), join(docs, "console-dns.png"))
    }
  })
})
