import { GitSshServer } from "@hostplane/adapters-providers"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { commitFiles, git, gitOk, scratch, withToken, workingCopy } from "./support/GitClient.ts"
import { gitRepos } from "./support/GitRepos.ts"
import { generateKey, removeGeneratedKeys } from "./support/SshKeys.ts"
import { unique, useSuite } from "./support/TestServer.ts"

// The ssh-keygen folders this file made.
afterAll(removeGeneratedKeys)

const site = (page: string, manifest: Record<string, unknown> = { name: "pushed" }) => ({
  "service.json": JSON.stringify(manifest),
  "assets/index.html": page,
  "README.md": "not deployed\n"
})

// Decisions.md part 17, through the real git client over smart HTTP and SSH.
describe.each(backends)("deploy on push (%s)", (_name, stores) => {
  const suite = useSuite(stores)
  const { api, newOrg, withRole } = suite
  const { reposOf, httpUrl, tokenOf, createRepo } = gitRepos(suite)
  const admin = () => ({ token: suite.admin.token })

  let sshPort = 0
  let sshScope: Scope.Closeable
  let keyDir: string
  beforeAll(async () => {
    sshScope = await Effect.runPromise(Scope.make())
    keyDir = await Fs.mkdtemp(Path.join(Os.tmpdir(), "hostplane-ssh-host-"))
    const context = await suite.server.run(
      Layer.buildWithScope(
        GitSshServer.layer({ host: "127.0.0.1", port: 0, hostKeyPath: Path.join(keyDir, "host_key") }),
        sshScope
      )
    )
    sshPort = Context.get(context, GitSshServer.GitSshServer).port
  })
  afterAll(async () => {
    await Effect.runPromise(Scope.close(sshScope, Exit.void))
    await Fs.rm(keyDir, { recursive: true, force: true })
  })

  /** A project with a repo `site`, deployOnPush set by the admin, and a working copy of `files` pushable over HTTP. */
  const setUp = async (deployOnPush: boolean) => {
    const slug = await newOrg()
    const project = await suite.newProject(slug)
    await createRepo(slug, project.name)
    if (deployOnPush) {
      const patched = await api.patch(`${reposOf(slug, project.name)}/site`, { deployOnPush: true }, admin())
      expect(patched.status, JSON.stringify(patched.body)).toBe(204)
    }
    const member = await withRole(slug, "member")
    const token = await tokenOf(member)
    const { dir, cleanup } = await scratch()
    const url = withToken(httpUrl(slug, project.name, "site"), token)
    const deployments = async () =>
      (await api.get(`/v1/orgs/${slug}/projects/${project.name}/deployments`, admin())).body.items as Array<{
        version: number
        uploadedBy: string
        git: unknown
        files: number
      }>
    return { slug, project, member, dir, cleanup, url, deployments }
  }

  it("deployOnPush is false by default and set by PATCH (admin only: a member is 403, an outsider 404)", async () => {
    const slug = await newOrg()
    const project = await suite.newProject(slug)
    const created = await createRepo(slug, project.name)
    expect(created).toMatchObject({ deployOnPush: false })
    const path = `${reposOf(slug, project.name)}/site`
    const member = await withRole(slug, "member")
    expect((await api.patch(path, { deployOnPush: true }, { token: member.token })).status).toBe(403)
    const outsider = await api.login(unique("outsider"))
    expect((await api.patch(path, { deployOnPush: true }, { token: outsider.token })).status).toBe(404)
    expect((await api.patch(path, { deployOnPush: "yes" }, admin())).status).toBe(400)
    expect((await api.patch(path, { deployOnPush: true }, admin())).status).toBe(204)
    expect((await api.get(path, admin())).body).toMatchObject({ deployOnPush: true })
    const listed = (await api.get(reposOf(slug, project.name), admin())).body.items
    expect(listed).toEqual([expect.objectContaining({ name: "site", deployOnPush: true })])
  })

  it("over HTTP: a push to the default branch deploys its tree, says so in remote: lines, and records the pusher and commit", async () => {
    const { slug, project, member, dir, cleanup, url, deployments } = await setUp(true)
    const work = await workingCopy(Path.join(dir, "work"), site("<h1>one</h1>"), "First deploy\n\nwith a body")
    const pushed = await git(work, ["push", url, "HEAD:refs/heads/main"])
    expect(pushed.code, pushed.stderr).toBe(0)
    expect(pushed.stderr).toMatch(
      new RegExp(`remote: deployed version 1, https://${project.name}\\.apps\\.localhost/`, "u")
    )
    const commit = await gitOk(work, ["rev-parse", "HEAD"])
    const [first] = await deployments()
    expect(first).toMatchObject({
      version: 1,
      uploadedBy: member.userId,
      files: 2,
      git: { commit, message: "First deploy", branch: "main", dirty: false }
    })
    // Another branch deploys nothing; a tree the upload checks refuse never fails the push.
    await commitFiles(work, { "assets/index.html": "<h1>draft</h1>" }, "draft")
    const other = await git(work, ["push", url, "HEAD:refs/heads/draft"])
    expect(other.code, other.stderr).toBe(0)
    expect(other.stderr).not.toMatch(/remote: (not )?deployed/u)
    expect((await deployments()).length).toBe(1)
    await commitFiles(work, { "service.json": JSON.stringify({ name: 42 }) }, "bad manifest")
    const refused = await git(work, ["push", url, "HEAD:refs/heads/main"])
    expect(refused.code, refused.stderr).toBe(0)
    expect(refused.stderr).toMatch(/remote: not deployed: invalid_bundle /u)
    expect((await deployments()).length).toBe(1)
    const refs = (await api.get(`${reposOf(slug, project.name)}/site/refs`, admin())).body
    expect(refs.branches.find((b: { name: string }) => b.name === "main").commit).toBe(
      await gitOk(work, ["rev-parse", "HEAD"])
    )
    // A force push that rewinds main deploys the tree it points at.
    await gitOk(work, ["reset", "-q", "--hard", commit])
    await commitFiles(work, { "assets/index.html": "<h1>two</h1>" }, "Second")
    const forced = await git(work, ["push", "--force", url, "HEAD:refs/heads/main"])
    expect(forced.code, forced.stderr).toBe(0)
    expect(forced.stderr).toMatch(/remote: deployed version 2, /u)
    expect((await deployments())[0]).toMatchObject({ version: 2, git: { message: "Second", branch: "main" } })
    await cleanup()
  })

  it("over SSH the same push deploys; with deployOnPush off nothing deploys", async () => {
    const on = await setUp(true)
    const key = await generateKey("ed25519")
    expect((await api.post("/v1/me/ssh-keys", { publicKey: key.publicKey }, { token: on.member.token })).status).toBe(
      201
    )
    const sshEnv = {
      GIT_SSH_COMMAND: `ssh -i ${key.file} -o IdentitiesOnly=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o BatchMode=yes`
    }
    const work = await workingCopy(Path.join(on.dir, "work"), site("<h1>ssh</h1>"), "Over SSH")
    const ssh = `ssh://git@127.0.0.1:${sshPort}/${on.slug}/${on.project.name}/site.git`
    const pushed = await git(work, ["push", ssh, "HEAD:refs/heads/main"], sshEnv)
    expect(pushed.code, pushed.stderr).toBe(0)
    expect(pushed.stderr).toMatch(/remote: deployed version 1, https:\/\//u)
    expect(await on.deployments()).toEqual([
      expect.objectContaining({
        version: 1,
        uploadedBy: on.member.userId,
        git: expect.objectContaining({ message: "Over SSH" })
      })
    ])
    await on.cleanup()

    const off = await setUp(false)
    const quiet = await workingCopy(Path.join(off.dir, "work"), site("<h1>off</h1>"))
    const plain = await git(quiet, ["push", off.url, "HEAD:refs/heads/main"])
    expect(plain.code, plain.stderr).toBe(0)
    expect(plain.stderr).not.toMatch(/remote: (not )?deployed/u)
    expect(await off.deployments()).toEqual([])
    await off.cleanup()
  })
})
