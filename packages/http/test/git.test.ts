import { Git, Jobs, Projects } from "@hostplane/core"
import { Duration, Effect, Option } from "effect"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { fastImport, git, gitOk, importData, scratch, withToken } from "./support/GitClient.ts"
import { gitRepos } from "./support/GitRepos.ts"
import { itChecksRoles } from "./support/roleMatrix.ts"
import { generateKey, removeGeneratedKeys } from "./support/SshKeys.ts"
import { auditOf, useSuite } from "./support/TestServer.ts"

// The ssh-keygen folders this file made.
afterAll(removeGeneratedKeys)

describe.each(backends)("spec 4.12 repositories (%s)", (name, stores) => {
  const suite = useSuite(stores, { git: { retention: Duration.hours(1) } })
  const { api, newOrg, newProject } = suite
  const { reposOf, createRepo, pushedRepo, httpUrl, tokenOf } = gitRepos(suite)
  const admin = () => ({ token: suite.admin.token })
  /**
   * A test of what browsing reads from git itself (trees, blobs, commits and their limits), where the store only finds
   * the repo as every other test does: it runs on the first store only, each store-bound rule on both.
   */
  const gitContentIt = (title: string, test: () => Promise<void>) => {
    if (name === backends[0]![0]) it(title, test)
  }

  itChecksRoles(suite, {
    name: "GET repos",
    min: "viewer",
    setup: async (slug) => (await newProject(slug)).name,
    request: (slug, project) => ({ method: "GET", path: reposOf(slug, project) })
  })
  itChecksRoles(suite, {
    name: "POST repos",
    min: "member",
    ok: 201,
    setup: async (slug) => (await newProject(slug)).name,
    request: (slug, project) => ({
      method: "POST",
      path: reposOf(slug, project),
      body: { name: `r${Math.random().toString(36).slice(2, 8)}` }
    })
  })
  const withRepo = async (slug: string) => {
    const project = (await newProject(slug)).name
    await createRepo(slug, project)
    return `${reposOf(slug, project)}/site`
  }
  itChecksRoles(suite, {
    name: "GET repo",
    min: "viewer",
    setup: withRepo,
    request: (_slug, repo) => ({ method: "GET", path: repo })
  })
  itChecksRoles(suite, {
    name: "PATCH repo",
    min: "admin",
    ok: 204,
    setup: withRepo,
    request: (_slug, repo) => ({ method: "PATCH", path: repo, body: { visibility: "public" } })
  })
  itChecksRoles(suite, {
    name: "DELETE repo",
    min: "admin",
    ok: 204,
    setup: async (slug) => (await newProject(slug)).name,
    request: async (slug, project) => {
      const name = `r${Math.random().toString(36).slice(2, 8)}`
      await createRepo(slug, project, { name })
      return { method: "DELETE", path: `${reposOf(slug, project)}/${name}` }
    }
  })
  const withPushed = async (slug: string) => {
    const pushed = await pushedRepo(slug)
    await pushed.cleanup()
    return `${reposOf(slug, pushed.project.name)}/site`
  }
  for (const [name, suffix] of [
    ["ref-updates", "/ref-updates"],
    ["refs", "/refs"],
    ["tree", "/tree"],
    ["blob", "/blob?path=README.md"],
    ["commits", "/commits"]
  ] as const) {
    itChecksRoles(suite, {
      name: `GET repo ${name}`,
      min: "viewer",
      ok: 200,
      setup: withPushed,
      request: (_slug, repo) => ({ method: "GET", path: `${repo}${suffix}` })
    })
  }

  it("POST repos is 201 Repo with defaults private and main, cloneUrl and sshUrl; audit repo.create; GET lists it", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const reply = await api.post(reposOf(slug, project.name), { name: "Site.v2" }, admin())
    expect(reply.status).toBe(201)
    expect(reply.body).toEqual({
      name: "Site.v2",
      visibility: "private",
      defaultBranch: "main",
      deployOnPush: false,
      createdAt: expect.any(String),
      cloneUrl: `http://localhost:8080/git/${slug}/${project.name}/Site.v2.git`,
      sshUrl: `ssh://git@localhost:2222/${slug}/${project.name}/Site.v2.git`
    })
    const other = await api.post(
      reposOf(slug, project.name),
      { name: "docs", visibility: "public", defaultBranch: "trunk" },
      admin()
    )
    expect(other.body).toMatchObject({ visibility: "public", defaultBranch: "trunk" })
    expect(
      (await api.get(reposOf(slug, project.name), admin())).body.items.map((r: { name: string }) => r.name)
    ).toEqual(["docs", "Site.v2"])
    expect((await api.get(`${reposOf(slug, project.name)}/site.V2`, admin())).body.name).toBe("Site.v2")
    const events = (await auditOf(suite.server, slug)).filter((event) => event.action === "repo.create")
    expect(events.map((event) => [event.actorId, event.target, event.data.name, event.data.visibility])).toEqual([
      [suite.admin.userId, project.id, "Site.v2", "private"],
      [suite.admin.userId, project.id, "docs", "public"]
    ])
  })

  it("POST only inserts a record: no directory until first use (browsing makes none), then one named by the repo's id", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    await createRepo(slug, project.name)
    const id = await suite.server.run(
      Effect.map(
        Effect.flatMap(Git.RepoStore, (store) => store.findByName(project.id, "site")),
        (row) => Option.getOrThrow(row).id
      )
    )
    const onDisk = () => Fs.readdir(suite.server.gitDir).then((names) => names.filter((name) => name.endsWith(".git")))
    const before = await onDisk()
    expect(before).not.toContain(`${id}.git`)
    for (const suffix of ["/refs", "/tree", "/commits", "/ref-updates"]) {
      await api.get(`${reposOf(slug, project.name)}/site${suffix}`, admin())
    }
    expect(await onDisk()).toEqual(before)
    const token = await tokenOf(suite.admin)
    const { dir, cleanup } = await scratch()
    const listed = await git(dir, ["ls-remote", withToken(httpUrl(slug, project.name, "site"), token)])
    expect(listed.code, listed.stderr).toBe(0)
    await cleanup()
    expect(await onDisk()).toContain(`${id}.git`)
    expect(await onDisk()).toHaveLength(before.length + 1)
  })

  it("a repo name outside ^[A-Za-z0-9._-]{1,100}$, ending .git, or . or .. is 400; a bad default branch is 400", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    for (const body of [
      { name: "with space" },
      { name: "a/b" },
      { name: "site.git" },
      { name: "Site.GIT" },
      { name: "." },
      { name: ".." },
      { name: "" },
      { name: "x".repeat(101) },
      { name: "ä" },
      { name: "ok", visibility: "secret" },
      { name: "ok", defaultBranch: "a..b" },
      { name: "ok", defaultBranch: "-x" },
      { name: "ok", defaultBranch: "x.lock" },
      { name: "ok", defaultBranch: "a b" }
    ]) {
      const reply = await api.post(reposOf(slug, project.name), body, admin())
      expect([reply.status, reply.body.code], JSON.stringify(body)).toEqual([400, "bad_request"])
    }
    expect((await api.post(reposOf(slug, project.name), { name: "x".repeat(100) }, admin())).status).toBe(201)
  })

  it("names are unique per project ignoring case (409 repo_exists); another project may reuse one; an unknown project is 404", async () => {
    const slug = await newOrg()
    const [one, two] = [await newProject(slug), await newProject(slug)]
    await createRepo(slug, one.name, { name: "Site" })
    const clash = await api.post(reposOf(slug, one.name), { name: "sITE" }, admin())
    expect([clash.status, clash.body.code]).toEqual([409, "repo_exists"])
    expect((await api.post(reposOf(slug, two.name), { name: "site" }, admin())).status).toBe(201)
    expect((await api.post(reposOf(slug, "nope"), { name: "site" }, admin())).status).toBe(404)
    expect((await api.get(`${reposOf(slug, one.name)}/nope`, admin())).body.code).toBe("not_found")
  })

  it("PATCH renames, changes visibility and moves HEAD to the new default branch; 409 repo_exists on a taken name; audit repo.update", async () => {
    const slug = await newOrg()
    const pushed = await pushedRepo(slug)
    const repos = reposOf(slug, pushed.project.name)
    await gitOk(pushed.work, ["push", "-q", pushed.url, "HEAD:refs/heads/trunk"])
    await createRepo(slug, pushed.project.name, { name: "taken" })
    const clash = await api.patch(`${repos}/site`, { name: "TAKEN" }, admin())
    expect([clash.status, clash.body.code]).toEqual([409, "repo_exists"])
    const bad = await api.patch(`${repos}/site`, { defaultBranch: "no..pe" }, admin())
    expect([bad.status, bad.body.code]).toEqual([400, "bad_request"])
    const patched = await api.patch(
      `${repos}/site`,
      { name: "web", visibility: "public", defaultBranch: "trunk" },
      admin()
    )
    expect(patched.status).toBe(204)
    expect((await api.get(`${repos}/site`, admin())).status).toBe(404)
    expect((await api.get(`${repos}/web`, admin())).body).toMatchObject({
      name: "web",
      visibility: "public",
      defaultBranch: "trunk",
      cloneUrl: expect.stringMatching(/\/web\.git$/)
    })
    expect((await api.get(`${repos}/web/refs`, admin())).body.head).toBe("trunk")
    // The renamed repo is the same repository: a clone at the new name sees HEAD on trunk.
    const head = await git(pushed.dir, [
      "ls-remote",
      "--symref",
      withToken(httpUrl(slug, pushed.project.name, "web"), pushed.token),
      "HEAD"
    ])
    expect(head.stdout).toContain("ref: refs/heads/trunk\tHEAD")
    const events = (await auditOf(suite.server, slug)).filter((event) => event.action === "repo.update")
    expect(events).toHaveLength(1)
    expect(events[0]!.data).toMatchObject({
      name: "web",
      changed: { name: "web", visibility: "public", defaultBranch: "trunk" }
    })
    await pushed.cleanup()
  })

  it("DELETE soft-deletes: gone from every URL at once, the name free again and a new repo of it starts empty; audit repo.delete", async () => {
    const slug = await newOrg()
    const pushed = await pushedRepo(slug)
    const repos = reposOf(slug, pushed.project.name)
    expect((await api.delete(`${repos}/site`, undefined, admin())).status).toBe(204)
    for (const suffix of ["", "/refs", "/tree", "/commits", "/ref-updates"]) {
      expect((await api.get(`${repos}/site${suffix}`, admin())).status, suffix).toBe(404)
    }
    expect((await api.get(repos, admin())).body.items).toEqual([])
    const clone = await git(pushed.dir, ["clone", pushed.url, "gone"])
    expect(clone.code).not.toBe(0)
    expect(clone.stderr).toMatch(/not found|404/)
    expect((await api.delete(`${repos}/site`, undefined, admin())).status).toBe(404)
    await createRepo(slug, pushed.project.name)
    expect((await api.get(`${repos}/site/refs`, admin())).body).toEqual({ head: "main", branches: [], tags: [] })
    const events = (await auditOf(suite.server, slug)).filter((event) => event.action === "repo.delete")
    expect(events.map((event) => [event.actorId, event.target, event.data.name])).toEqual([
      [suite.admin.userId, pushed.project.id, "site"]
    ])
    await pushed.cleanup()
  })

  it("the retention runner removes a deleted repo's disk copy after SERVICE_GIT_RETENTION, not before", async () => {
    const slug = await newOrg()
    const pushed = await pushedRepo(slug)
    const id = await suite.server.run(
      Effect.map(
        Effect.flatMap(Git.RepoStore, (store) => store.findByName(pushed.project.id, "site")),
        (row) => Option.getOrThrow(row).id
      )
    )
    const onDisk = () =>
      Fs.stat(Path.join(suite.server.gitDir, `${id}.git`)).then(
        () => true,
        () => false
      )
    expect(await onDisk()).toBe(true)
    await api.delete(`${reposOf(slug, pushed.project.name)}/site`, undefined, admin())
    // Within the suite's one-hour retention the runner leaves it.
    await suite.server.run(Git.purgeExpired)
    expect(await onDisk()).toBe(true)
    // Once the retention has passed, the runner removes the disk copy and then the record.
    await suite.server.run(
      Effect.gen(function* () {
        const config = yield* Git.GitConfig
        return yield* Git.purgeExpired.pipe(
          Effect.provideService(Git.GitConfig, { ...config, retention: Duration.zero })
        )
      })
    )
    expect(await onDisk()).toBe(false)
    const left = await suite.server.run(
      Effect.flatMap(Git.RepoStore, (store) => store.listDeletedBefore(new Date().toISOString(), 10_000))
    )
    expect(left.map((row) => row.id)).not.toContain(id)
    await pushed.cleanup()
  })

  it("an org holding repositories is 409 org_not_empty with details.holdings.repositories; a project delete soft-deletes its repos", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    await createRepo(slug, project.name, { name: "one" })
    await createRepo(slug, project.name, { name: "two" })
    const refused = await api.delete(`/v1/orgs/${slug}`, { confirm: slug }, admin())
    expect([refused.status, refused.body.code]).toEqual([409, "org_not_empty"])
    expect(refused.body.details.holdings.repositories).toEqual({ count: 2, names: ["one", "two"] })
    const started = await api.delete(`/v1/orgs/${slug}/projects/${project.name}`, { confirm: project.name }, admin())
    expect(started.status).toBe(202)
    await suite.server.run(Jobs.JobRunner.runOnce([Projects.projectDeleteHandler]))
    const deleted = await api.delete(`/v1/orgs/${slug}`, { confirm: slug }, admin())
    expect(deleted.status).toBe(204)
  })

  gitContentIt("browse: refs, tree, blob and commits match what git reports (rev-parse, ls-tree, log)", async () => {
    const slug = await newOrg()
    const pushed = await pushedRepo(slug, {
      "README.md": "hello\n",
      "src/app.ts": "export {}\n",
      "src/lib/x.ts": "x\n"
    })
    const repo = `${reposOf(slug, pushed.project.name)}/site`
    await Fs.chmod(Path.join(pushed.work, "README.md"), 0o755)
    await Fs.symlink("README.md", Path.join(pushed.work, "link"))
    const second = await pushed.commitFiles({ "bin.dat": new Uint8Array([1, 0, 2, 3]) }, "second\n\nwith a body")
    await gitOk(pushed.work, ["tag", "-a", "v1", "-m", "release", pushed.commit])
    await gitOk(pushed.work, ["tag", "light"])
    await gitOk(pushed.work, ["push", "-q", "--tags", pushed.url, "HEAD:refs/heads/main", "HEAD:refs/heads/feature"])
    const refs = await api.get(`${repo}/refs`, admin())
    expect(refs.body).toEqual({
      head: "main",
      branches: [
        { name: "feature", commit: second },
        { name: "main", commit: second }
      ],
      tags: [
        { name: "light", commit: second },
        { name: "v1", commit: pushed.commit }
      ]
    })
    const root = await api.get(`${repo}/tree`, admin())
    const lsTree = (await gitOk(pushed.work, ["ls-tree", "-l", "HEAD"])).split("\n").map((line) => {
      const [meta, name] = line.split("\t")
      const [mode, type, , size] = meta!.split(/ +/)
      return { name, path: name, type, mode, size: size === "-" ? null : Number(size) }
    })
    expect(root.body).toEqual({ ref: "main", commit: second, path: "", entries: lsTree, truncated: false })
    expect(root.body.entries.find((entry: { name: string }) => entry.name === "README.md").mode).toBe("100755")
    expect(root.body.entries.find((entry: { name: string }) => entry.name === "link").mode).toBe("120000")
    const sub = await api.get(`${repo}/tree?path=src/&ref=${pushed.commit}`, admin())
    expect(sub.body).toMatchObject({ ref: pushed.commit, commit: pushed.commit, path: "src" })
    expect(sub.body.entries.map((entry: { path: string; type: string }) => [entry.path, entry.type])).toEqual([
      ["src/app.ts", "blob"],
      ["src/lib", "tree"]
    ])
    const blob = await api.get(`${repo}/blob?path=src/app.ts&ref=v1`, admin())
    expect(blob.body).toEqual({
      ref: "v1",
      path: "src/app.ts",
      size: 10,
      binary: false,
      tooLarge: false,
      content: "export {}\n"
    })
    const binary = await api.get(`${repo}/blob?path=bin.dat`, admin())
    expect(binary.body).toMatchObject({ size: 4, binary: true, tooLarge: false, content: null })
    const commits = await api.get(`${repo}/commits`, admin())
    expect(commits.body.items.map((commit: { sha: string }) => commit.sha)).toEqual(
      (await gitOk(pushed.work, ["log", "--format=%H"])).split("\n")
    )
    expect(commits.body.items[0]).toEqual({
      sha: second,
      message: "second\n\nwith a body",
      author: { name: "Test Author", email: "author@example.test", date: expect.stringMatching(/Z$/) },
      parents: [pushed.commit]
    })
    expect((await api.get(`${repo}/commits?limit=1`, admin())).body.items).toHaveLength(1)
    expect((await api.get(`${repo}/commits?limit=5000`, admin())).body.items).toHaveLength(2)
    for (const limit of ["0", "1.5", "x"]) {
      expect((await api.get(`${repo}/commits?limit=${limit}`, admin())).status, limit).toBe(400)
    }
    await pushed.cleanup()
  })

  it("browse: 404 no_ref for an unknown ref or a never-pushed repo, 404 no_path for a missing path, a wrong kind or one escaping the tree", async () => {
    const slug = await newOrg()
    const pushed = await pushedRepo(slug, { "README.md": "hi\n", "dir/a.txt": "a\n" })
    const repo = `${reposOf(slug, pushed.project.name)}/site`
    for (const query of ["ref=nope", "ref=-x", "ref=main~1", "ref=deadbeef", "ref=main:README.md"]) {
      const reply = await api.get(`${repo}/tree?${query}`, admin())
      expect([reply.status, reply.body.code], query).toEqual([404, "no_ref"])
    }
    for (const path of [
      "nope",
      "../README.md",
      "dir/../README.md",
      "./dir",
      "dir//a.txt",
      "README.md",
      "dir%5Ca.txt"
    ]) {
      const reply = await api.get(`${repo}/tree?path=${path}`, admin())
      expect([reply.status, reply.body.code], path).toEqual([404, "no_path"])
    }
    for (const path of ["dir", "", "../dir/a.txt", "nope"]) {
      const reply = await api.get(`${repo}/blob?path=${path}`, admin())
      expect([reply.status, reply.body.code], path).toEqual([404, "no_path"])
    }
    expect((await api.get(`${repo}/blob?path=dir/a.txt&ref=nope`, admin())).body.code).toBe("no_ref")
    await createRepo(slug, pushed.project.name, { name: "empty" })
    const empty = `${reposOf(slug, pushed.project.name)}/empty`
    expect((await api.get(`${empty}/refs`, admin())).body).toEqual({ head: "main", branches: [], tags: [] })
    expect((await api.get(`${empty}/tree`, admin())).body.code).toBe("no_ref")
    await pushed.cleanup()
  })

  gitContentIt(
    "a blob over 1 MiB is tooLarge and never read; exactly 1 MiB is read; a tree over 1000 entries is truncated",
    async () => {
      const slug = await newOrg()
      const files: Record<string, string> = {
        "big.txt": "a".repeat(1024 * 1024 + 1),
        "edge.txt": "b".repeat(1024 * 1024)
      }
      for (let i = 0; i < 1001; i++) files[`many/f${String(i).padStart(4, "0")}`] = `${i}\n`
      const pushed = await pushedRepo(slug, files)
      const repo = `${reposOf(slug, pushed.project.name)}/site`
      expect((await api.get(`${repo}/blob?path=big.txt`, admin())).body).toEqual({
        ref: "main",
        path: "big.txt",
        size: 1024 * 1024 + 1,
        binary: false,
        tooLarge: true,
        content: null
      })
      const edge = await api.get(`${repo}/blob?path=edge.txt`, admin())
      expect([edge.body.tooLarge, edge.body.content.length]).toEqual([false, 1024 * 1024])
      const many = await api.get(`${repo}/tree?path=many`, admin())
      expect([many.body.entries.length, many.body.truncated]).toEqual([1000, true])
      await pushed.cleanup()
    }
  )

  gitContentIt(
    "limits at their edges: commits default and maximum 200, a tree of exactly 1000 entries, git's binary rule at byte 8,000, a large binary, a submodule",
    async () => {
      const slug = await newOrg()
      const pushed = await pushedRepo(slug)
      const repo = `${reposOf(slug, pushed.project.name)}/site`
      const gitlink = "1234567890abcdef1234567890abcdef12345678"
      const nulAt = (at: number) => Buffer.concat([Buffer.alloc(at, "a"), Buffer.from([0]), Buffer.from("tail\n")])
      const files: Array<readonly [string, Uint8Array | string]> = [
        ["nul7999.bin", nulAt(7999)],
        ["nul8000.bin", nulAt(8000)],
        ["large.bin", Buffer.concat([Buffer.from([0]), Buffer.alloc(1024 * 1024, 1)])],
        ...Array.from({ length: 1000 }, (_, i) => [`exact/f${String(i).padStart(4, "0")}`, `${i}\n`] as const)
      ]
      // 205 commits on top of the pushed one: the first adds the files and a gitlink, the rest change nothing.
      const stream = [
        Buffer.from(`commit refs/heads/main\ncommitter A <a@example.test> 1700000000 +0000\n`),
        importData("files"),
        Buffer.from(`from ${pushed.commit}\nM 160000 ${gitlink} sub\n`),
        ...files.flatMap(([path, content]) => [Buffer.from(`M 100644 inline ${path}\n`), importData(content)]),
        ...Array.from({ length: 204 }, (_, i) =>
          Buffer.concat([
            Buffer.from(`commit refs/heads/main\ncommitter A <a@example.test> ${1700000001 + i} +0000\n`),
            importData(`c${i}`)
          ])
        )
      ]
      await fastImport(pushed.work, Buffer.concat(stream))
      await gitOk(pushed.work, ["push", "-q", pushed.url, "main"])
      const log = (await gitOk(pushed.work, ["log", "--format=%H"])).split("\n")
      expect(log).toHaveLength(206)
      for (const query of ["", "?limit=200", "?limit=201", "?limit=5000"]) {
        const commits = await api.get(`${repo}/commits${query}`, admin())
        expect(
          commits.body.items.map((commit: { sha: string }) => commit.sha),
          query
        ).toEqual(log.slice(0, 200))
      }
      expect((await api.get(`${repo}/commits?limit=199`, admin())).body.items).toHaveLength(199)
      const exact = await api.get(`${repo}/tree?path=exact`, admin())
      expect([exact.body.entries.length, exact.body.truncated]).toEqual([1000, false])
      const root = await api.get(`${repo}/tree`, admin())
      expect(root.body.entries.find((entry: { name: string }) => entry.name === "sub")).toEqual({
        name: "sub",
        path: "sub",
        type: "commit",
        mode: "160000",
        size: null
      })
      expect(root.body.entries.find((entry: { name: string }) => entry.name === "exact")).toMatchObject({
        type: "tree",
        mode: "040000",
        size: null
      })
      const submodule = await api.get(`${repo}/blob?path=sub`, admin())
      expect([submodule.status, submodule.body.code]).toEqual([404, "no_path"])
      expect((await api.get(`${repo}/blob?path=nul7999.bin`, admin())).body).toMatchObject({
        size: 8005,
        binary: true,
        tooLarge: false,
        content: null
      })
      expect((await api.get(`${repo}/blob?path=nul8000.bin`, admin())).body).toMatchObject({
        size: 8006,
        binary: false,
        tooLarge: false,
        content: `${"a".repeat(8000)}\u0000tail\n`
      })
      expect((await api.get(`${repo}/blob?path=large.bin`, admin())).body).toEqual({
        ref: "main",
        path: "large.bin",
        size: 1024 * 1024 + 1,
        binary: false,
        tooLarge: true,
        content: null
      })
      await pushed.cleanup()
    }
  )

  it("the latest 200 ref updates are listed: a push of 201 new branches after the first push of main", async () => {
    const slug = await newOrg()
    const pushed = await pushedRepo(slug)
    const repo = `${reposOf(slug, pushed.project.name)}/site`
    // Ref updates: one push of 201 new branches after the first push of main; the latest 200 are returned.
    const branches = Array.from({ length: 201 }, (_, i) => `b${String(i).padStart(3, "0")}`)
    for (const branch of branches)
      await Fs.writeFile(Path.join(pushed.work, ".git", "refs", "heads", branch), `${pushed.commit}\n`)
    await gitOk(pushed.work, ["push", "-q", pushed.url, "refs/heads/b*:refs/heads/b*"])
    const updates = (await api.get(`${repo}/ref-updates`, admin())).body.items as Array<{
      ref: string
      old: string | null
    }>
    expect(updates).toHaveLength(200)
    expect(new Set(updates.map((update) => update.ref)).size).toBe(200)
    expect(updates.every((update) => /^refs\/heads\/b\d{3}$/.test(update.ref) && update.old === null)).toBe(true)
    await pushed.cleanup()
  })

  gitContentIt(
    "commits: an author date past year 9999 (git stores it) is given as git prints it, never a 500; others are UTC",
    async () => {
      const slug = await newOrg()
      const pushed = await pushedRepo(slug)
      const repo = `${reposOf(slug, pushed.project.name)}/site`
      // Seconds since 1970: past 32 bits (2106), year 10000, and beyond what a JavaScript Date can hold.
      const dates = [4294967296, 253402300800, 99999999999999]
      const commits = dates.map(
        (seconds, i) =>
          `commit refs/heads/main\nauthor Far <far@example.test> ${seconds} +0130\n` +
          `committer Far <far@example.test> ${seconds} +0000\n${importData(`at ${seconds}`)}` +
          (i === 0 ? `from ${pushed.commit}\n` : "")
      )
      await fastImport(pushed.work, Buffer.from(commits.join("")))
      await gitOk(pushed.work, ["push", "-q", pushed.url, "main"])
      const listed = await api.get(`${repo}/commits?limit=3`, admin())
      expect(listed.status, JSON.stringify(listed.body)).toBe(200)
      const printed = (await gitOk(pushed.work, ["log", "-n3", "--format=%aI"])).split("\n")
      expect(listed.body.items.map((commit: { author: { date: string } }) => commit.author.date)).toEqual([
        printed[0],
        printed[1],
        "2106-02-07T06:28:16.000Z"
      ])
      expect(printed[0]).toMatch(/^3170843-/)
      expect(printed[1]).toBe("10000-01-01T01:30:00+01:30")
      await pushed.cleanup()
    }
  )

  /** Every repository route on one repo URL, reads and writes. */
  const repoRoutes = (repo: string) =>
    [
      ["GET", repo],
      ["PATCH", repo, { visibility: "public" }],
      ["DELETE", repo],
      ["GET", `${repo}/ref-updates`],
      ["GET", `${repo}/refs`],
      ["GET", `${repo}/tree`],
      ["GET", `${repo}/blob?path=README.md`],
      ["GET", `${repo}/commits`]
    ] as const

  it("foreign names are 404 not_found on every repo route: another org's project under my org, another project's repo", async () => {
    const [mine, theirs] = [await newOrg(), await newOrg()]
    const ours = await pushedRepo(mine)
    const other = await pushedRepo(theirs)
    const sibling = await newProject(mine)
    await createRepo(mine, sibling.name, { name: "only-here" })
    const foreign = [
      `${reposOf(mine, other.project.name)}/site`,
      `${reposOf(mine, ours.project.name)}/only-here`,
      `${reposOf(theirs, ours.project.name)}/site`
    ]
    for (const repo of foreign) {
      for (const [method, path, body] of repoRoutes(repo)) {
        const reply = await api.call(method, path, { token: suite.admin.token, body })
        expect([reply.status, reply.body.code], `${method} ${path}`).toEqual([404, "not_found"])
      }
    }
    const create = await api.post(reposOf(mine, other.project.name), { name: "x" }, admin())
    expect([create.status, create.body.code]).toEqual([404, "not_found"])
    // Nothing changed where the names do exist.
    for (const [slug, project, name] of [
      [theirs, other.project.name, "site"],
      [mine, sibling.name, "only-here"],
      [mine, ours.project.name, "site"]
    ] as const) {
      expect((await api.get(`${reposOf(slug, project)}/${name}`, admin())).body.visibility).toBe("private")
    }
    expect((await api.get(reposOf(theirs, other.project.name), admin())).body.items).toHaveLength(1)
    await ours.cleanup()
    await other.cleanup()
  })

  it("a personal access token as Bearer acts with its user's role on 4.12: viewer reads and is 403 on writes, member creates, admin patches; an outsider's is 404, a revoked one 401", async () => {
    const slug = await newOrg()
    const pushed = await pushedRepo(slug)
    const repos = reposOf(slug, pushed.project.name)
    const [viewer, member] = [await suite.withRole(slug, "viewer"), await suite.withRole(slug, "member")]
    const [viewerPat, memberPat, outsiderPat] = [
      await tokenOf(viewer),
      await tokenOf(member),
      await tokenOf(suite.outsider)
    ]
    for (const suffix of ["", "/site", "/site/refs", "/site/tree", "/site/commits", "/site/ref-updates"]) {
      expect((await api.get(`${repos}${suffix}`, { token: viewerPat })).status, suffix).toBe(200)
    }
    const refused = [
      await api.post(repos, { name: "by-viewer" }, { token: viewerPat }),
      await api.patch(`${repos}/site`, { visibility: "public" }, { token: viewerPat }),
      await api.delete(`${repos}/site`, undefined, { token: viewerPat }),
      await api.patch(`${repos}/site`, { visibility: "public" }, { token: memberPat })
    ]
    expect(refused.map((reply) => [reply.status, reply.body.code])).toEqual(Array(4).fill([403, "forbidden"]))
    expect((await api.post(repos, { name: "by-member" }, { token: memberPat })).status).toBe(201)
    expect((await api.patch(`${repos}/by-member`, { visibility: "public" }, { token: pushed.token })).status).toBe(204)
    const outsider = await api.get(`${repos}/site`, { token: outsiderPat })
    expect([outsider.status, outsider.body.code]).toEqual([404, "not_found"])
    const events = (await auditOf(suite.server, slug)).filter((event) => event.action === "repo.create")
    expect(events.map((event) => [event.actorId, event.data.name])).toContainEqual([member.userId, "by-member"])
    const listed = (await api.get("/v1/me/tokens", { token: viewer.token })).body.items
    await api.delete(`/v1/me/tokens/${listed[0].id}`, undefined, { token: viewer.token })
    const revoked = await api.get(repos, { token: viewerPat })
    expect([revoked.status, revoked.body.code]).toEqual([401, "unauthorized"])
    await pushed.cleanup()
  })

  it("PATCH to a new case of its own name is a rename, not repo_exists; PATCH {} is 204 and changes nothing", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const repos = reposOf(slug, project.name)
    const created = await createRepo(slug, project.name, { name: "site", visibility: "public", defaultBranch: "trunk" })
    expect((await api.patch(`${repos}/site`, {}, admin())).status).toBe(204)
    expect((await api.get(`${repos}/site`, admin())).body).toEqual(created)
    expect((await api.patch(`${repos}/site`, { name: "Site" }, admin())).status).toBe(204)
    expect((await api.get(`${repos}/site`, admin())).body).toMatchObject({
      name: "Site",
      visibility: "public",
      defaultBranch: "trunk",
      cloneUrl: expect.stringMatching(/\/Site\.git$/)
    })
  })

  it("bad input on the repo, token and key routes is 4xx, never a 500, and stores nothing: NUL, broken escapes, non-UTF-8, malformed or oversize bodies, unknown ids", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    const repos = reposOf(slug, project.name)
    await createRepo(slug, project.name)
    const token = suite.admin.token
    const check = (label: string, reply: { status: number; body: { code?: string } }, status: number, code: string) =>
      expect([reply.status, reply.body.code], label).toEqual([status, code])
    for (const [method, path] of [
      ["GET", `${repos}/si%00te`],
      ["PATCH", `${repos}/si%00te`],
      ["DELETE", `${repos}/si%00te`],
      ["GET", `${repos}/%E0%A4%A`],
      ["GET", `${repos}/site/tree?path=a%00b`],
      ["GET", `${repos}/site/tree?ref=main%00`],
      ["GET", `${repos}/site/blob?path=%FF`],
      ["GET", `${repos}/site/commits?limit=1%00`],
      ["DELETE", "/v1/me/tokens/pat_%00"],
      ["DELETE", "/v1/me/ssh-keys/key_%ED%A0%80"]
    ] as const) {
      const body = method === "PATCH" ? {} : undefined
      check(`${method} ${path}`, await api.call(method, path, { token, body }), 400, "bad_request")
    }
    const key = await generateKey("ed25519")
    for (const [path, raw] of [
      [repos, '{"name":"a\\u0000b"}'],
      [`${repos}/site`, '{"name":"x","visibility":"public\\u0000"}'],
      ["/v1/me/tokens", '{"name":"ci\\u0000"}'],
      ["/v1/me/tokens", '{"name":"ci","expiresAt":"2099-01-01T00:00:00Z\\u0000"}'],
      [
        "/v1/me/ssh-keys",
        JSON.stringify({ publicKey: key.publicKey, title: "laptop" }).replace("laptop", "lap\\u0000top")
      ],
      ["/v1/me/ssh-keys", JSON.stringify({ publicKey: `${key.publicKey}\u0000` })],
      ["/v1/me/tokens", '{"name":"\\ud800"}'],
      [repos, '{"name":'],
      ["/v1/me/tokens", "[]"],
      ["/v1/me/ssh-keys", "null"]
    ] as const) {
      const method = path.endsWith("/site") ? "PATCH" : "POST"
      check(`${method} ${path} ${raw}`, await api.call(method, path, { token, raw }), 400, "bad_request")
    }
    const latin1 = Buffer.concat([Buffer.from('{"name":"caf'), Buffer.from([0xe9]), Buffer.from('"}')])
    for (const path of [repos, "/v1/me/tokens"]) {
      const reply = await fetch(`${suite.server.url}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: latin1
      })
      expect([reply.status, ((await reply.json()) as { code: string }).code], path).toEqual([400, "bad_request"])
    }
    const huge = JSON.stringify({ name: "big", title: "x".repeat(3 * 1024 * 1024) })
    for (const [method, path] of [
      ["POST", repos],
      ["PATCH", `${repos}/site`],
      ["POST", "/v1/me/tokens"],
      ["POST", "/v1/me/ssh-keys"]
    ] as const) {
      check(`${method} ${path} 3 MiB`, await api.call(method, path, { token, raw: huge }), 413, "payload_too_large")
    }
    for (const path of [
      "/v1/me/tokens/pat_unknown",
      "/v1/me/tokens/unknown",
      `/v1/me/tokens/${"p".repeat(300)}`,
      "/v1/me/ssh-keys/key_unknown",
      "/v1/me/ssh-keys/SHA256:abc",
      `/v1/me/ssh-keys/${"k".repeat(300)}`
    ]) {
      check(`DELETE ${path}`, await api.delete(path, undefined, { token }), 404, "not_found")
    }
    const smart = await fetch(
      `${suite.server.url}/git/${slug}/${project.name}/si%00te.git/info/refs?service=git-upload-pack`
    )
    expect(smart.status).toBe(400)
    expect((await api.get(repos, admin())).body.items.map((repo: { name: string }) => repo.name)).toEqual(["site"])
    expect((await api.get(`${repos}/site`, admin())).body.visibility).toBe("private")
    const names = (await api.get("/v1/me/tokens", admin())).body.items.map((t: { name: string }) => t.name)
    expect(names.some((name: string) => name.startsWith("ci") || name.startsWith("caf"))).toBe(false)
    expect(
      (await api.get("/v1/me/ssh-keys", admin())).body.items.map((k: { fingerprint: string }) => k.fingerprint)
    ).not.toContain(key.fingerprint)
  })

  it("every 4.12 repository route without a session is 401", async () => {
    const slug = await newOrg()
    const project = await newProject(slug)
    await createRepo(slug, project.name)
    const repo = `${reposOf(slug, project.name)}/site`
    const replies = await Promise.all([
      api.get(reposOf(slug, project.name)),
      api.post(reposOf(slug, project.name), { name: "x" }),
      api.get(repo),
      api.patch(repo, { name: "y" }),
      api.delete(repo),
      ...["/ref-updates", "/refs", "/tree", "/blob", "/commits"].map((suffix) => api.get(`${repo}${suffix}`))
    ])
    expect(replies.map((reply) => reply.status)).toEqual(Array(10).fill(401))
  })
})

describe.each([
  [{ settings: { publicUrl: "http://[::1]:8080" } }, "http://[::1]:8080", "ssh://git@[::1]:2222/"],
  [{ git: { sshListen: { host: "0.0.0.0", port: 22 } } }, "http://localhost:8080", "git@localhost:"],
  [
    { settings: { publicUrl: "https://[2001:db8::1]" }, git: { sshListen: { host: "::", port: 22 } } },
    "https://[2001:db8::1]",
    "git@[2001:db8::1]:"
  ]
] as const)("Repo URLs for public URL and SSH port %j", (settings, http, ssh) => {
  const suite = useSuite(backends[1]![1], settings)
  const { reposOf, createRepo } = gitRepos(suite)

  it(`cloneUrl starts ${http}/git/ and sshUrl ${ssh} (decisions 11: git@host:path on port 22, else ssh://git@host:port/path)`, async () => {
    const slug = await suite.newOrg()
    const project = await suite.newProject(slug)
    const repo = await createRepo(slug, project.name)
    const path = `${slug}/${project.name}/site.git`
    expect([repo.cloneUrl, repo.sshUrl]).toEqual([`${http}/git/${path}`, `${ssh}${path}`])
    if (ssh.startsWith("ssh://")) {
      const url = new URL(repo.sshUrl)
      expect([url.username, url.hostname, url.port, url.pathname]).toEqual(["git", "[::1]", "2222", `/${path}`])
    }
    const listed = await suite.api.get(reposOf(slug, project.name), { token: suite.admin.token })
    expect(listed.body.items[0].sshUrl).toBe(repo.sshUrl)
  })
})
