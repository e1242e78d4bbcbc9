import { IdentityProviderOAuth } from "@hostplane/adapters-providers"
import { Secrets } from "@hostplane/core"
import { FakeIdentityProvider, layerMemory } from "@hostplane/testkit"
import { Effect, Layer, ManagedRuntime, Redacted } from "effect"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { client, startTestServer, type TestServer, unique } from "../../http/test/support/TestServer.ts"
import { buildBundle, hostplane, type Run } from "./support/Cli.ts"
import { tempDirs } from "./support/TempDirs.ts"

beforeAll(buildBundle, 300_000)

const tempDir = tempDirs()

/** A deployable folder: a manifest, a worker, assets, and a README the layout leaves out. */
const siteFolder = (manifest: Record<string, unknown>, page = "<h1>hello from the cli</h1>") => {
  const dir = tempDir("hostplane-cli-site-")
  Fs.writeFileSync(Path.join(dir, "service.json"), JSON.stringify(manifest))
  Fs.mkdirSync(Path.join(dir, "assets/css"), { recursive: true })
  Fs.writeFileSync(Path.join(dir, "assets/index.html"), page)
  Fs.writeFileSync(Path.join(dir, "assets/css/site.css"), "body { color: teal }")
  Fs.mkdirSync(Path.join(dir, "worker"))
  Fs.writeFileSync(Path.join(dir, "worker/index.js"), "export default {}")
  Fs.writeFileSync(Path.join(dir, "README.md"), "not deployed")
  return dir
}

/** GET on the reference edge with `Host`. */
const edgeGet = (server: TestServer, host: string, path = "/") =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const url = new URL(server.edgeUrl)
    const request = Http.request({ host: url.hostname, port: url.port, path, headers: { host } }, (response) => {
      let body = ""
      response.on("data", (chunk) => (body += chunk))
      response.on("end", () => resolve({ status: response.statusCode!, body }))
    })
    request.on("error", reject)
    request.end()
  })

// Each command is a Node process of its own (about a second of CPU): a test running several gets more time.
describe("the hostplane CLI against a test server", { timeout: 120_000 }, () => {
  let server: TestServer
  let configDir: string
  let env: Record<string, string>
  let token: string
  let subject: string
  const api = client(() => server.url)

  beforeAll(async () => {
    server = await startTestServer(Layer.fresh(layerMemory), { settings: { siteUrl: "http://{host}:8081/" } })
    configDir = tempDir("hostplane-cli-config-")
    env = { HOSTPLANE_URL: server.url, HOSTPLANE_CONFIG_DIR: configDir }
    subject = unique("cli")
    const session = await api.login(subject)
    token = session.token
  })
  afterAll(async () => {
    await server?.close()
  })

  it("login --token - reads the token from stdin, checks it, and stores it mode 0600; whoami --json answers the user", async () => {
    const login = await hostplane(["login", "--token", "-"], { env, input: `${token}\n` })
    expect(login.code, login.stderr).toBe(0)
    expect(login.stdout).toContain(subject)
    expect(login.stdout + login.stderr).not.toContain(token)
    const file = Path.join(configDir, "credentials.json")
    expect(Fs.statSync(file).mode & 0o777).toBe(0o600)
    expect(JSON.parse(Fs.readFileSync(file, "utf8"))).toMatchObject({ url: server.url, token, subject })
    const whoami = await hostplane(["whoami", "--json"], { env })
    expect(whoami.code, whoami.stderr).toBe(0)
    const me = JSON.parse(whoami.stdout)
    expect(me.user.subject).toBe(subject)
    expect(me.orgs).toEqual([expect.objectContaining({ personal: true, role: "admin" })])
  })

  it("login --token - takes a personal access token (CI's way in); after its revocation the CLI is refused", async () => {
    const created = await api.post("/v1/me/tokens", { name: "cli-ci" }, { token })
    expect(created.status).toBe(201)
    const pat = created.body as { id: string; token: string }
    const dir = tempDir("hostplane-cli-config-")
    const patEnv = { ...env, HOSTPLANE_CONFIG_DIR: dir }
    const login = await hostplane(["login", "--token", "-"], { env: patEnv, input: `${pat.token}\n` })
    expect(login.code, login.stderr).toBe(0)
    expect(login.stdout + login.stderr).not.toContain(pat.token)
    const whoami = await hostplane(["whoami", "--json"], { env: patEnv })
    expect(JSON.parse(whoami.stdout).user.subject).toBe(subject)
    expect((await api.delete(`/v1/me/tokens/${pat.id}`, undefined, { token })).status).toBe(204)
    const refused = await hostplane(["whoami"], { env: patEnv })
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(/^error unauthorized: /)
  })

  it("a token that the server refuses is not stored: exit 1 with code unauthorized", async () => {
    const dir = tempDir("hostplane-cli-config-")
    const run = await hostplane(["login", "--token", "-"], {
      env: { ...env, HOSTPLANE_CONFIG_DIR: dir },
      input: "not-a-token"
    })
    expect(run.code).toBe(1)
    expect(run.stderr).toMatch(/^error unauthorized: /)
    expect(Fs.existsSync(Path.join(dir, "credentials.json"))).toBe(false)
  })

  it("login --dev <subject> signs in through the embedded server's dev login", async () => {
    const dir = tempDir("hostplane-cli-config-")
    const who = unique("dev")
    const login = await hostplane(["login", "--dev", who, "--json"], { env: { ...env, HOSTPLANE_CONFIG_DIR: dir } })
    expect(login.code, login.stderr).toBe(0)
    expect(JSON.parse(login.stdout).user.subject).toBe(who)
    const whoami = await hostplane(["whoami"], { env: { ...env, HOSTPLANE_CONFIG_DIR: dir } })
    expect(whoami.stdout).toContain(who)
    const logout = await hostplane(["logout"], { env: { ...env, HOSTPLANE_CONFIG_DIR: dir } })
    expect(logout.code).toBe(0)
    const after = await hostplane(["whoami"], { env: { ...env, HOSTPLANE_CONFIG_DIR: dir } })
    expect(after.code).toBe(1)
    expect(after.stderr).toMatch(/^error not_logged_in: /)
  })

  it("HOSTPLANE_TOKEN signs every command in without a stored login (CI)", async () => {
    const run = await hostplane(["whoami", "--json"], {
      env: { ...env, HOSTPLANE_CONFIG_DIR: tempDir("hostplane-cli-config-"), HOSTPLANE_TOKEN: token }
    })
    expect(run.code, run.stderr).toBe(0)
    expect(JSON.parse(run.stdout).user.subject).toBe(subject)
  })

  it("--url beats HOSTPLANE_URL", async () => {
    const run = await hostplane(["whoami", "--url", "http://127.0.0.1:9/"], { env: { ...env, HOSTPLANE_TOKEN: token } })
    expect(run.code).toBe(1)
    expect(run.stderr).toMatch(/^error unreachable: /)
  })

  describe("deploy", () => {
    /** A fresh org per test: the free plan allows 3 projects per org. */
    let org: string
    beforeEach(async () => {
      org = unique("org")
      const reply = await api.post("/v1/orgs", { name: "CLI", slug: org }, { token })
      expect(reply.status).toBe(201)
    })
    const authed = () => ({ ...env, HOSTPLANE_TOKEN: token })

    it("deploys a folder (creating the project), fills the git headers, prints the version and URL; the edge serves it", async () => {
      const dir = siteFolder({ name: "Hello Site" })
      const git = (...args: Array<string>) =>
        execFileSync("git", ["-C", dir, ...args], {
          env: {
            ...process.env,
            GIT_AUTHOR_NAME: "t",
            GIT_AUTHOR_EMAIL: "t@e.test",
            GIT_COMMITTER_NAME: "t",
            GIT_COMMITTER_EMAIL: "t@e.test"
          }
        })
          .toString()
          .trim()
      git("init", "-q", "-b", "main")
      git("add", ".")
      git("commit", "-q", "-m", "First commit\n\nbody line")
      const project = unique("hello")
      const run = await hostplane(["deploy", dir, "--org", org, "--project", project, "--json"], { env: authed() })
      expect(run.code, run.stderr).toBe(0)
      const result = JSON.parse(run.stdout)
      expect(result).toMatchObject({ org, project, created: true, grants: [] })
      expect(result.deployment).toMatchObject({
        version: 1,
        live: true,
        files: 4,
        git: { commit: git("rev-parse", "HEAD"), message: "First commit", branch: "main", dirty: false }
      })
      expect(result.urls).toEqual([`http://${project}.apps.localhost:8081/`])
      expect(run.stderr).toContain("not deployed (outside service.json, worker/, assets/): README.md")
      expect(run.stderr).toMatch(/uploaded [0-9.]+ MiB/)
      const page = await edgeGet(server, `${project}.apps.localhost`)
      expect(page).toEqual({ status: 200, body: "<h1>hello from the cli</h1>" })
      expect((await edgeGet(server, `${project}.apps.localhost`, "/css/site.css")).body).toBe("body { color: teal }")
    })

    it("without --project, the project is named from service.json's name; human output names version and URL", async () => {
      const name = unique("named")
      const run = await hostplane(["deploy", siteFolder({ name }), "--org", org], { env: authed() })
      expect(run.code, run.stderr).toBe(0)
      expect(run.stdout).toContain(`deployed ${org}/${name} version 1`)
      expect(run.stdout).toContain(`http://${name}.apps.localhost:8081/`)
    })

    it("files the layout refuses are reported before upload: nothing is created", async () => {
      const dir = siteFolder({})
      Fs.symlinkSync("/etc/passwd", Path.join(dir, "assets/passwd"))
      Fs.writeFileSync(Path.join(dir, "assets/bad\\name"), "x")
      const project = unique("refused")
      const run = await hostplane(["deploy", dir, "--org", org, "--project", project], { env: authed() })
      expect(run.code).toBe(1)
      expect(run.stderr).toMatch(/^error invalid_bundle: 2 entries of .* cannot be deployed/)
      expect(run.stderr).toContain("assets/passwd (symlink)")
      expect(run.stderr).toContain("assets/bad\\name (bad_path)")
      expect((await api.get(`/v1/orgs/${org}/projects/${project}`, { token })).status).toBe(404)
    })

    it("a bad manifest is refused before upload with the server's reason", async () => {
      const run = await hostplane(
        ["deploy", siteFolder({ storage: "yes" }), "--org", org, "--project", unique("bad")],
        {
          env: authed()
        }
      )
      expect(run.code).toBe(1)
      expect(run.stderr).toMatch(/^error invalid_bundle: service.json does not match the manifest schema/)
    })

    it("calls the grant of every add-on the manifest declares, in order (database before auth)", async () => {
      const grants: Array<string> = []
      const target = new URL(server.url)
      // A proxy in front of the server that answers the add-on grant routes itself and records them.
      const proxy = Http.createServer((request, response) => {
        const grant = /^\/v1\/orgs\/[^/]+\/projects\/[^/]+\/(database|storage|email|auth|ai)$/.exec(request.url ?? "")
        if (request.method === "POST" && grant !== null) {
          grants.push(`${grant[1]} ${request.headers.authorization === `Bearer ${token}`}`)
          response.writeHead(200, { "content-type": "application/json" })
          return void response.end("{}")
        }
        const upstream = Http.request(
          {
            host: target.hostname,
            port: target.port,
            path: request.url,
            method: request.method,
            headers: request.headers
          },
          (reply) => {
            response.writeHead(reply.statusCode!, reply.headers)
            reply.pipe(response)
          }
        )
        request.pipe(upstream)
      })
      await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve))
      try {
        const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
        const dir = siteFolder({ auth: true, storage: true, database: true, email: false })
        const run = await hostplane(["deploy", dir, "--url", url, "--org", org, "--project", unique("addons")], {
          env: authed()
        })
        expect(run.code, run.stderr).toBe(0)
        expect(grants).toEqual(["database true", "storage true", "auth true"])
        expect(run.stdout).toMatch(/granted database\ngranted storage\ngranted auth\n/)
      } finally {
        proxy.closeAllConnections()
        await new Promise((resolve) => proxy.close(resolve))
      }
    })

    it("ai: true in service.json grants the AI add-on through the server's own grant route", async () => {
      const project = unique("ai")
      const run = await hostplane(["deploy", siteFolder({ ai: true }), "--org", org, "--project", project], {
        env: authed()
      })
      expect(run.code, run.stderr).toBe(0)
      expect(run.stdout).toContain("granted ai")
      const status = await api.get(`/v1/orgs/${org}/projects/${project}/ai`, { token })
      expect(status.body.granted).toBe(true)
    })

    it("a grant the server refuses (storage without an object store: 503 no_core): the deploy lands, then exits 1 naming the grant and why", async () => {
      const project = unique("nogrant")
      const run = await hostplane(["deploy", siteFolder({ storage: true }), "--org", org, "--project", project], {
        env: authed()
      })
      expect(run.code).toBe(1)
      expect(run.stdout).toContain(`deployed ${org}/${project} version 1`)
      expect(run.stderr).toMatch(
        /error no_core: deployed version 1, but 1 add-on grant\(s\) failed: storage: the storage add-on's backend is not connected/
      )
    })

    it("rollback serves the version before the live one, or the one named; deployments --json lists them", async () => {
      const project = unique("roll")
      const flags = ["--org", org, "--project", project]
      for (const page of ["one", "two", "three"]) {
        const run = await hostplane(["deploy", siteFolder({}, page), ...flags], { env: authed() })
        expect(run.code, run.stderr).toBe(0)
      }
      const host = `${project}.apps.localhost`
      expect((await edgeGet(server, host)).body).toBe("three")
      const back = await hostplane(["rollback", ...flags], { env: authed() })
      expect(back.code, back.stderr).toBe(0)
      expect(back.stdout).toContain(`${project} now serves version 2`)
      expect((await edgeGet(server, host)).body).toBe("two")
      const named = await hostplane(["rollback", "1", ...flags, "--json"], { env: authed() })
      expect(JSON.parse(named.stdout)).toMatchObject({ version: 1, live: true })
      expect((await edgeGet(server, host)).body).toBe("one")
      const list = await hostplane(["deployments", ...flags, "--json"], { env: authed() })
      const items = JSON.parse(list.stdout).items as Array<{ version: number; live: boolean }>
      expect(items.map((d) => [d.version, d.live])).toEqual([
        [3, false],
        [2, false],
        [1, true]
      ])
      const missing = await hostplane(["rollback", "9", ...flags], { env: authed() })
      expect(missing.code).toBe(1)
      expect(missing.stderr).toMatch(/^error not_found: /)
    })
  })

  describe("project commands read .hostplane.json written by link", () => {
    let org: string
    let project: { name: string; id: string; hostname: string }
    let folder: string
    const authed = () => ({ ...env, HOSTPLANE_TOKEN: token })
    beforeAll(async () => {
      org = unique("org")
      expect((await api.post("/v1/orgs", { name: "Link", slug: org }, { token })).status).toBe(201)
      const reply = await api.post(`/v1/orgs/${org}/projects`, { name: unique("linked") }, { token })
      project = reply.body
      folder = tempDir("hostplane-cli-linked-")
    })
    const inFolder = (args: ReadonlyArray<string>, input?: string): Promise<Run> =>
      hostplane(args, { env: authed(), cwd: folder, ...(input === undefined ? {} : { input }) })

    it("link writes the org and project; later commands need no flags", async () => {
      const run = await inFolder(["link", "--org", org, "--project", project.name])
      expect(run.code, run.stderr).toBe(0)
      expect(JSON.parse(Fs.readFileSync(Path.join(folder, ".hostplane.json"), "utf8"))).toEqual({
        org,
        project: project.name
      })
      const hostnames = await inFolder(["hostnames", "list", "--json"])
      expect(hostnames.code, hostnames.stderr).toBe(0)
      expect(JSON.parse(hostnames.stdout).items).toEqual([expect.objectContaining({ kind: "default" })])
      const listed = await inFolder(["hostnames", "list"])
      expect(listed.stdout).toMatch(/NAME\s+KIND\s+STATUS\s+LAST ERROR\s+TLS\s+TLS EXPIRES\s+TLS ERROR/)
      expect(listed.stdout).toMatch(new RegExp(`${project.name}\\.\\S+\\s+default\\s+active\\s+none`))
      const retried = await inFolder(["hostnames", "tls-retry", project.hostname, "--json"])
      expect(retried.code, retried.stderr).toBe(0)
      expect(JSON.parse(retried.stdout).tls).toEqual({ status: "none", expiresAt: null, lastError: null })
    })

    it("secrets put reads the value from stdin: it never appears in arguments or output; list shows name and version", async () => {
      const value = `s3cr3t-${unique("value")}`
      const put = await inFolder(["secrets", "put", "API_KEY"], `${value}\n`)
      expect(put.code, put.stderr).toBe(0)
      expect(put.stdout).toContain("API_KEY is at version 1")
      expect(put.stdout + put.stderr).not.toContain(value)
      const list = await inFolder(["secrets", "list", "--json"])
      expect(list.stdout).not.toContain(value)
      expect(JSON.parse(list.stdout).items).toEqual([expect.objectContaining({ name: "API_KEY", version: 1 })])
      const opened = await server.run(
        Effect.flatMap(Effect.service(Secrets.Secrets), (secrets) => secrets.open(project.id as never))
      )
      expect(opened.map((secret) => [secret.name, Redacted.value(secret.value)])).toEqual([["API_KEY", value]])
    })

    it("a failing command prints its code and message and exits 1; with --json the error is JSON on stderr", async () => {
      const run = await inFolder(["secrets", "delete", "NOT_THERE"])
      expect(run.code).toBe(1)
      expect(run.stderr).toMatch(/^error not_found: /)
      const json = await inFolder(["secrets", "put", "SERVICE_X", "--json"], "v")
      expect(json.code).toBe(1)
      expect(JSON.parse(json.stderr).error).toMatchObject({ code: "reserved_name" })
    })

    it("a usage error is one line naming it, exit 2 (JSON on stderr with --json); --help exits 0", async () => {
      const unknown = await inFolder(["secrets", "frobnicate"])
      expect(unknown.code).toBe(2)
      expect(unknown.stdout).toBe("")
      expect(unknown.stderr).toMatch(/^error usage: Unknown subcommand "frobnicate" for "hostplane secrets".*\n$/)
      expect(unknown.stderr.trim().split("\n")).toHaveLength(1)
      const flag = await inFolder(["secrets", "list", "--frob", "--json"])
      expect(flag.code).toBe(2)
      expect(JSON.parse(flag.stderr).error).toMatchObject({ code: "usage", message: expect.stringContaining("--frob") })
      const help = await inFolder(["secrets", "put", "--help"])
      expect(help.code).toBe(0)
      expect(help.stdout).toContain("stdin")
    })

    it("domains list answers the org's domains (none yet); an unknown domain is not_found", async () => {
      const list = await inFolder(["domains", "list", "--json"])
      expect(list.code, list.stderr).toBe(0)
      expect(JSON.parse(list.stdout)).toEqual({ items: [] })
      const missing = await inFolder(["domains", "show", "nowhere.example"])
      expect(missing.code).toBe(1)
      expect(missing.stderr).toMatch(/^error not_found: /)
    })

    it("dns: create a zone, set and unset an rrset, show it as JSON", async () => {
      const zone = `${unique("zone")}.example`
      const created = await inFolder(["dns", "create", zone])
      expect(created.code, created.stderr).toBe(0)
      const set = await inFolder(["dns", "set", zone, "www", "A", "192.0.2.1", "192.0.2.2", "--ttl", "600"])
      expect(set.code, set.stderr).toBe(0)
      const shown = await inFolder(["dns", "show", zone, "--json"])
      const detail = JSON.parse(shown.stdout)
      expect(detail.rrsets).toContainEqual(
        expect.objectContaining({ name: "www", type: "A", ttl: 600, records: ["192.0.2.1", "192.0.2.2"] })
      )
      const unset = await inFolder(["dns", "unset", zone, "www", "A"])
      expect(unset.code, unset.stderr).toBe(0)
      const managed = await inFolder(["dns", "unset", zone, "@", "SOA"])
      expect(managed.code).toBe(1)
      expect(managed.stderr).toMatch(/^error managed_rrset: /)
    })

    it("repos list --json answers the project's repositories (none yet); an unknown one is not_found", async () => {
      const list = await inFolder(["repos", "list", "--json"])
      expect(list.code, list.stderr).toBe(0)
      expect(JSON.parse(list.stdout)).toEqual({ items: [] })
      const missing = await inFolder(["repos", "show", "nope"])
      expect(missing.code).toBe(1)
      expect(missing.stderr).toMatch(/^error not_found: /)
    })

    it("db: a project without a database answers the server's code; db --help names every subcommand", async () => {
      const connect = await inFolder(["db", "connect"])
      expect(connect.code).toBe(1)
      expect(connect.stderr).toMatch(/^error not_found: .*no database/)
      const help = await inFolder(["db", "--help"])
      expect(help.code, help.stderr).toBe(0)
      for (const sub of ["connect", "tokens", "export", "generations", "restore", "delete"])
        expect(help.stdout).toContain(sub)
    })

    it("access set password reads the password from stdin; access show --json parses", async () => {
      const set = await inFolder(["access", "set", "password", "--password"], "correct horse battery\n")
      expect(set.code, set.stderr).toBe(0)
      const show = await inFolder(["access", "show", "--json"])
      expect(JSON.parse(show.stdout)).toEqual({ mode: "password", hasPassword: true, hasBypass: false })
    })
  })
})

describe("hostplane login through the browser (OAuth, RFC 8252 loopback redirect)", { timeout: 120_000 }, () => {
  let idp: ManagedRuntime.ManagedRuntime<FakeIdentityProvider, never>
  let fake: FakeIdentityProvider["Service"]
  let server: TestServer
  beforeAll(async () => {
    idp = ManagedRuntime.make(FakeIdentityProvider.layer())
    fake = await idp.runPromise(Effect.service(FakeIdentityProvider))
    server = await startTestServer(Layer.fresh(layerMemory), {}, undefined, undefined, {
      providers: [
        IdentityProviderOAuth.layer({
          authorizeUrl: fake.authorizeUrl,
          tokenUrl: fake.tokenUrl,
          userinfoUrl: fake.userinfoUrl,
          clientId: fake.clientId,
          clientSecret: fake.clientSecret ?? undefined
        })
      ]
    })
  })
  afterAll(async () => {
    await server?.close()
    await idp?.dispose()
  })

  it("prints the start address, receives the fragment on its loopback page and stores the session", async () => {
    const subject = unique("browser")
    await idp.runPromise(fake.signIn({ subject }))
    const configDir = tempDir("hostplane-cli-config-")
    let startUrl: ((url: string) => void) | undefined
    const started = new Promise<string>((resolve) => (startUrl = resolve))
    const login = hostplane(["login", "--no-browser", "--url", server.url], {
      env: { HOSTPLANE_CONFIG_DIR: configDir },
      onStderr: (text) => {
        const match = /(http:\/\/127\.0\.0\.1:\d+\/v1\/auth\/idp\/start\?redirect=\S+)/.exec(text)
        if (match !== null) startUrl?.(match[1]!)
      }
    })
    // The browser: start (keeps the state cookie), the provider's page, our callback, then the CLI's loopback page.
    const start = await fetch(await started, { redirect: "manual" })
    expect(start.status).toBe(302)
    const cookie = (start.headers.get("set-cookie") ?? "").split(";")[0]!
    const provider = await fetch(start.headers.get("location")!, { redirect: "manual" })
    // The provider sends the browser back to the public URL's callback; this test server answers it on its own port.
    const back = new URL(provider.headers.get("location")!)
    const callback = await fetch(`${server.url}${back.pathname}${back.search}`, {
      redirect: "manual",
      headers: { cookie }
    })
    const landing = new URL(callback.headers.get("location")!)
    expect(landing.origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    const page = await fetch(`${landing.origin}${landing.pathname}`)
    expect(page.status).toBe(200)
    expect(await page.text()).toContain("location.hash")
    // Another origin cannot hand the CLI a session.
    const forged = await fetch(`${landing.origin}${landing.pathname}`, {
      method: "POST",
      headers: { origin: "http://evil.test" },
      body: "token=forged"
    })
    expect(forged.status).toBe(404)
    // What the page's script posts: the fragment, from the page's own origin.
    const posted = await fetch(`${landing.origin}${landing.pathname}`, {
      method: "POST",
      headers: { origin: landing.origin, "content-type": "text/plain" },
      body: landing.hash.slice(1)
    })
    expect(posted.status).toBe(200)
    const run = await login
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toContain(`signed in to ${server.url} as ${subject}`)
    const stored = JSON.parse(Fs.readFileSync(Path.join(configDir, "credentials.json"), "utf8"))
    expect(stored).toMatchObject({ url: server.url, subject })
    expect((await client(server.url).get("/v1/me", { token: stored.token })).status).toBe(200)
  })
})
