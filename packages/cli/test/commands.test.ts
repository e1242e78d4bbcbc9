import { layerMemory } from "@hostplane/testkit"
import { Layer } from "effect"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { client, startTestServer, type TestServer, unique } from "../../http/test/support/TestServer.ts"
import { buildBundle, hostplane, type Run } from "./support/Cli.ts"
import { tempDirs } from "./support/TempDirs.ts"

const tempDir = tempDirs()

/** The lines of a human table after its header, split on runs of two or more spaces. */
const rows = (run: Run) =>
  run.stdout
    .trim()
    .split("\n")
    .slice(1)
    .map((line) => line.split(/ {2,}/u))

// Each command is a process of its own running the bundled bin, against a server on HTTP.
describe("CLI commands of decisions part 17", { timeout: 180_000 }, () => {
  let server: TestServer
  let token: string
  let subject: string
  let org: string
  let env: Record<string, string>
  const api = client(() => server.url)
  const run = (
    args: ReadonlyArray<string>,
    options: { input?: string; cwd?: string; env?: Record<string, string> } = {}
  ) =>
    hostplane(args, {
      env: { ...env, ...options.env },
      ...(options.input === undefined ? {} : { input: options.input }),
      ...(options.cwd === undefined ? {} : { cwd: options.cwd })
    })

  beforeAll(async () => {
    await buildBundle()
    server = await startTestServer(Layer.fresh(layerMemory), { settings: { siteUrl: "http://{host}:8081/" } })
    subject = unique("cmd")
    token = (await api.login(subject)).token
    org = unique("team")
    expect((await api.post("/v1/orgs", { name: "Team", slug: org }, { token })).status).toBe(201)
    env = { HOSTPLANE_URL: server.url, HOSTPLANE_TOKEN: token, HOSTPLANE_CONFIG_DIR: tempDir("hostplane-cli-config-") }
  }, 300_000)
  afterAll(async () => {
    await server?.close()
  })

  it("tokens: create prints the token once, list never shows it, revoke by name ends it", async () => {
    const name = unique("ci")
    const created = await run(["tokens", "create", name, "--expires", "30d"])
    expect(created.code, created.stderr).toBe(0)
    const pat = created.stdout.trim()
    expect(pat).toMatch(/^svc_pat_/u)
    expect(created.stderr).toContain("shown once")
    expect((await api.get("/v1/me", { token: pat })).status).toBe(200)
    const list = await run(["tokens", "list"])
    expect(list.code, list.stderr).toBe(0)
    expect(list.stdout).not.toContain(pat)
    expect(list.stdout.split("\n")[0]).toMatch(/^NAME +ID +CREATED +EXPIRES +LAST USED$/u)
    expect(rows(list).map((row) => row[0])).toContain(name)
    const json = JSON.parse((await run(["tokens", "list", "--json"])).stdout)
    const listed = json.items.find((item: { name: string }) => item.name === name)
    expect(listed).toMatchObject({ name, revokedAt: null })
    expect(Date.parse(listed.expiresAt) - Date.now()).toBeGreaterThan(29 * 86_400_000)
    const revoked = await run(["tokens", "revoke", name])
    expect(revoked.code, revoked.stderr).toBe(0)
    expect(revoked.stdout).toContain(`revoked ${name}`)
    expect((await api.get("/v1/me", { token: pat })).status).toBe(401)
    expect((await run(["tokens", "list"])).stdout).not.toContain(name)
    expect((await run(["tokens", "list", "--all", "--json"])).stdout).toContain(name)
    const again = await run(["tokens", "revoke", name])
    expect(again.code).toBe(1)
    expect(again.stderr).toMatch(/^error not_found: no token named /u)
    const badExpiry = await run(["tokens", "create", "x", "--expires", "soon"])
    expect(badExpiry.code).toBe(2)
    expect(badExpiry.stderr).toMatch(/^error usage: --expires soon/u)
  })

  it("keys: add from a file and from stdin, a private key is refused, remove by title", async () => {
    const dir = tempDir("hostplane-cli-keys-")
    for (const name of ["one", "two"]) {
      execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", `${name}@cli`, "-f", Path.join(dir, name)])
    }
    const fromFile = await run(["keys", "add", Path.join(dir, "one.pub")])
    expect(fromFile.code, fromFile.stderr).toBe(0)
    expect(fromFile.stdout).toMatch(/^added ed25519 key one@cli \(SHA256:/u)
    const fromStdin = await run(["keys", "add", "-", "--title", "laptop", "--json"], {
      input: Fs.readFileSync(Path.join(dir, "two.pub"), "utf8")
    })
    expect(fromStdin.code, fromStdin.stderr).toBe(0)
    expect(JSON.parse(fromStdin.stdout)).toMatchObject({ title: "laptop", type: "ed25519" })
    const privateKey = await run(["keys", "add", Path.join(dir, "one")])
    expect(privateKey.code).toBe(1)
    expect(privateKey.stderr).toMatch(/^error private_key: .* holds a private key/u)
    const missing = await run(["keys", "add", Path.join(dir, "nope.pub")])
    expect(missing.code).toBe(1)
    expect(missing.stderr).toMatch(/^error file_unreadable: cannot read .*nope\.pub: ENOENT\n$/u)
    const list = await run(["keys", "list"])
    expect(
      rows(list)
        .map((row) => row[0])
        .sort()
    ).toEqual(["laptop", "one@cli"])
    const removed = await run(["keys", "remove", "laptop"])
    expect(removed.code, removed.stderr).toBe(0)
    expect(rows(await run(["keys", "list"])).map((row) => row[0])).toEqual(["one@cli"])
  })

  it("members: add a user who signed in, change the role, remove; the org comes from --org", async () => {
    const other = unique("mate")
    await api.login(other, { email: `${other}@example.test` })
    const added = await run(["members", "add", other, "--role", "viewer", "--org", org])
    expect(added.code, added.stderr).toBe(0)
    expect(added.stdout).toContain(`${other} is now viewer of ${org}`)
    const list = await run(["members", "list", "--org", org])
    expect(list.stdout.split("\n")[0]).toMatch(/^SUBJECT +NAME +EMAIL +ROLE +JOINED$/u)
    expect(rows(list).map((row) => [row[0], row.at(-2)])).toEqual(
      expect.arrayContaining([
        [subject, "admin"],
        [other, "viewer"]
      ])
    )
    const role = await run(["members", "role", `${other}@example.test`, "member", "--org", org, "--json"])
    expect(role.code, role.stderr).toBe(0)
    expect(JSON.parse(role.stdout)).toMatchObject({ subject: other, role: "member" })
    const badRole = await run(["members", "role", other, "owner", "--org", org])
    expect(badRole.code).toBe(2)
    expect(badRole.stderr).toMatch(/^error usage: /u)
    const lastAdmin = await run(["members", "role", subject, "viewer", "--org", org])
    expect(lastAdmin.code).toBe(1)
    expect(lastAdmin.stderr).toMatch(/^error last_admin: /u)
    const removed = await run(["members", "remove", other, "--org", org])
    expect(removed.code, removed.stderr).toBe(0)
    const after = JSON.parse((await run(["members", "list", "--org", org, "--json"])).stdout)
    expect(after.items.map((m: { subject: string }) => m.subject)).toEqual([subject])
  })

  it("invites: create, list and revoke by email", async () => {
    const email = `${unique("guest")}@example.test`
    const created = await run(["invites", "create", email, "--role", "viewer", "--org", org])
    expect(created.code, created.stderr).toBe(0)
    expect(created.stdout).toContain(`invited ${email} as viewer of ${org}`)
    const list = await run(["invites", "list", "--org", org])
    expect(rows(list)).toEqual([[email, "viewer", "pending", expect.any(String), expect.any(String)]])
    const revoked = await run(["invites", "revoke", email, "--org", org])
    expect(revoked.code, revoked.stderr).toBe(0)
    const after = JSON.parse((await run(["invites", "list", "--org", org, "--json"])).stdout)
    expect(after.items.filter((i: { state: string }) => i.state === "pending")).toEqual([])
    const gone = await run(["invites", "revoke", email, "--org", org])
    expect(gone.code).toBe(1)
    expect(gone.stderr).toMatch(/^error not_found: no pending invite named /u)
  })

  it("deploy links the folder of the project it creates; projects show, open and delete take the name or the link", async () => {
    const dir = tempDir("hostplane-cli-deploy-")
    Fs.writeFileSync(Path.join(dir, "service.json"), JSON.stringify({ name: "linked-site" }))
    Fs.mkdirSync(Path.join(dir, "assets"))
    Fs.writeFileSync(Path.join(dir, "assets/index.html"), "<p>hi</p>")
    const project = unique("site")
    const deployed = await run(["deploy", ".", "--org", org, "--project", project], { cwd: dir })
    expect(deployed.code, deployed.stderr).toBe(0)
    expect(deployed.stderr).toContain(`linked ${dir} to ${org}/${project}`)
    expect(JSON.parse(Fs.readFileSync(Path.join(dir, ".hostplane.json"), "utf8"))).toEqual({ org, project })

    const shown = await run(["projects", "show"], { cwd: dir })
    expect(shown.code, shown.stderr).toBe(0)
    expect(shown.stdout).toMatch(new RegExp(`^${org}/${project}  ${project}\\.`, "u"))
    expect(shown.stdout).toMatch(/serving: version 1 \(/u)
    expect(shown.stdout).toMatch(/^ADD-ON +DECLARED +PROVISIONED$/mu)
    const byName = await run(["projects", "show", project, "--org", org, "--json"])
    expect(JSON.parse(byName.stdout).project.name).toBe(project)

    const opened = Path.join(dir, "opened.txt")
    const browser = Path.join(dir, "browser.sh")
    Fs.writeFileSync(browser, `#!/bin/sh\nprintf '%s' "$1" > '${opened}'\n`, { mode: 0o755 })
    const open = await run(["open"], { cwd: dir, env: { BROWSER: browser } })
    expect(open.code, open.stderr).toBe(0)
    expect(open.stdout).toBe(`http://${project}.apps.localhost:8081/\n`)
    await expect.poll(() => Fs.existsSync(opened) && Fs.readFileSync(opened, "utf8")).toBe(open.stdout.trim())

    const unconfirmed = await run(["projects", "delete", project, "--org", org])
    expect(unconfirmed.code).toBe(2)
    expect(unconfirmed.stderr).toMatch(/^error usage: deleting .* pass --yes/u)
    const deleted = await run(["projects", "delete", project, "--org", org, "--yes"])
    expect(deleted.code, deleted.stderr).toBe(0)
    expect(deleted.stdout).toMatch(new RegExp(`^deleting ${project}: operation \\S+\\n$`, "u"))
  })

  it("link without flags off a terminal explains the flags (exit 2); with them it links", async () => {
    const dir = tempDir("hostplane-cli-link-")
    const bare = await run(["link"], { cwd: dir })
    expect(bare.code).toBe(2)
    expect(bare.stderr).toMatch(/^error usage: which project\? pass --project <name> .*hostplane link` asks\n$/u)
    expect(Fs.existsSync(Path.join(dir, ".hostplane.json"))).toBe(false)
    const project = unique("lk")
    expect((await api.post(`/v1/orgs/${org}/projects`, { name: project }, { token })).status).toBe(201)
    const linked = await run(["link", "--org", org, "--project", project], { cwd: dir })
    expect(linked.code, linked.stderr).toBe(0)
    expect(JSON.parse(Fs.readFileSync(Path.join(dir, ".hostplane.json"), "utf8"))).toEqual({ org, project })
  })

  it("repos update switches deploy on push and renames; a bad switch value is a usage error", async () => {
    const project = unique("rp")
    expect((await api.post(`/v1/orgs/${org}/projects`, { name: project }, { token })).status).toBe(201)
    const where = ["--org", org, "--project", project]
    expect((await run(["repos", "create", "site", ...where])).code).toBe(0)
    const on = await run(["repos", "update", "site", "--deploy-on-push", "on", ...where])
    expect(on.code, on.stderr).toBe(0)
    expect(on.stdout).toBe("updated site (private, default branch main, deploy on push on)\n")
    const repo = `/v1/orgs/${org}/projects/${project}/repos`
    expect((await api.get(`${repo}/site`, { token })).body).toMatchObject({ deployOnPush: true })
    const shown = await run(["repos", "show", "site", ...where])
    expect(shown.stdout.split("\n")[0]).toBe("site (private, default branch main, deploy on push on)")
    const renamed = await run([
      "repos",
      "update",
      "site",
      "--name",
      "web",
      "--deploy-on-push",
      "off",
      "--json",
      ...where
    ])
    expect(renamed.code, renamed.stderr).toBe(0)
    expect(JSON.parse(renamed.stdout)).toMatchObject({ name: "web", deployOnPush: false })
    const bad = await run(["repos", "update", "web", "--deploy-on-push", "yes", ...where])
    expect(bad.code).toBe(2)
    expect(bad.stderr.trim().split("\n")).toHaveLength(1)
    expect((await api.get(`${repo}/web`, { token })).body).toMatchObject({ deployOnPush: false })
  })

  it("--help describes every command, and each command's --help every subcommand", async () => {
    const described = (help: string) =>
      help
        .slice(help.indexOf("SUBCOMMANDS") + "SUBCOMMANDS".length)
        .split("\n")
        .filter((line) => line.trim() !== "")
        .map((line) => line.trim().split(/ {2,}/u))
    const top = described((await run(["--help"])).stdout)
    expect(top.map(([name]) => name)).toEqual(expect.arrayContaining(["dev", "logs", "open", "tokens", "keys"]))
    for (const [name, description] of top) {
      expect(description, `hostplane ${name}`).toMatch(/\w/u)
      const help = (await run([name!, "--help"])).stdout
      if (!help.includes("SUBCOMMANDS")) continue
      for (const [sub, text] of described(help)) expect(text, `hostplane ${name} ${sub}`).toMatch(/\w/u)
    }
  })

  it("an unknown command, a bad flag and a server that does not answer are one line each, never a stack", async () => {
    const unknown = await run(["frobnicate"])
    expect(unknown).toMatchObject({ code: 2, stdout: "" })
    expect(unknown.stderr).toBe(
      'error usage: Unknown subcommand "frobnicate" for "hostplane" (see `hostplane --help`)\n'
    )
    const flag = await run(["tokens", "list", "--colour"])
    expect(flag.code).toBe(2)
    expect(flag.stderr.trim().split("\n")).toHaveLength(1)
    const down = await run(["members", "list", "--org", org, "--url", "http://127.0.0.1:9", "--json"])
    expect(down.code).toBe(1)
    expect(JSON.parse(down.stderr)).toEqual({
      error: { code: "unreachable", message: expect.stringMatching(/^no answer from http:\/\/127\.0\.0\.1:9\//u) }
    })
    expect(down.stderr).not.toMatch(/\n\s+at /u)
  })
})
