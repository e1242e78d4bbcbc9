import { Git, Jobs, Projects } from "@hostplane/core"
import { Duration, Effect, Option } from "effect"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { fastImport, git, gitOk, importData, withToken } from "./support/GitClient.ts"
import { gitRepos } from "./support/GitRepos.ts"
import { itChecksRoles } from "./support/roleMatrix.ts"
import { auditOf, useSuite } from "./support/TestServer.ts"

describe.each(backends)("spec 4.12 repositories (%s)", (_name, stores) => {
  const suite = useSuite(stores, { git: { retention: Duration.hours(1) } })
  const { api, newOrg, newProject } = suite
  const { reposOf, createRepo, pushedRepo, httpUrl } = gitRepos(suite)
  const admin = () => ({ token: suite.admin.token })

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

  it("browse: refs, tree, blob and commits match what git reports (rev-parse, ls-tree, log)", async () => {
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

  it("a blob over 1 MiB is tooLarge and never read; exactly 1 MiB is read; a tree over 1000 entries is truncated", async () => {
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
  })

  it("commits: an author date past year 9999 (git stores it) is given as git prints it, never a 500; others are UTC", async () => {
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
