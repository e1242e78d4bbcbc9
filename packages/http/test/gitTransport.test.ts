import { GitSshServer, GitStorageDisk } from "@hostplane/adapters-providers"
import { Git, Kernel } from "@hostplane/core"
import { Context, Effect, Exit, Layer, Option, Scope } from "effect"
import { execFile, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs/promises"
import * as Http from "node:http"
import { tmpdir } from "node:os"
import * as Path from "node:path"
import { gzipSync } from "node:zlib"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backends } from "./support/backends.ts"
import { commitFiles, git, gitOk, scratch, withToken, workingCopy } from "./support/GitClient.ts"
import { gitRepos } from "./support/GitRepos.ts"
import { type GeneratedKey, generateKey, removeGeneratedKeys } from "./support/SshKeys.ts"
import { type Session, unique, useSuite } from "./support/TestServer.ts"

// The ssh-keygen folders this file made.
afterAll(removeGeneratedKeys)

const pkt = (text: string) => `${(Buffer.byteLength(text) + 4).toString(16).padStart(4, "0")}${text}`

/** A protocol v2 `fetch` of `head` over smart HTTP, with the pushed repository's token; `lines` go after the delimiter. */
const uploadPack = (
  repoUrl: string,
  token: string,
  head: string,
  options: { readonly lines?: string; readonly agent?: string; readonly signal?: AbortSignal } = {}
) =>
  fetch(`${repoUrl}/git-upload-pack`, {
    method: "POST",
    headers: {
      authorization: `Basic ${Buffer.from(`x:${token}`).toString("base64")}`,
      "git-protocol": "version=2",
      "content-type": "application/x-git-upload-pack-request"
    },
    body:
      `${pkt("command=fetch\n")}${options.agent === undefined ? "" : pkt(`agent=${options.agent}\n`)}0001` +
      `${options.lines ?? ""}${pkt(`want ${head}\n`)}${pkt("done\n")}0000`,
    ...(options.signal === undefined ? {} : { signal: options.signal })
  })

/** Tests that push and clone tens of MiB of random bytes: on a loaded 2-core machine git alone nears the default 30 s. */
const bigPackDeadline = 120_000

describe.each(backends)("spec 4.12 git transport over smart HTTP and SSH (%s)", (name, stores) => {
  const suite = useSuite(stores)
  const { api, newOrg, withRole } = suite
  const { reposOf, httpUrl, tokenOf, createRepo, pushedRepo } = gitRepos(suite)
  const admin = () => ({ token: suite.admin.token })
  /**
   * A test of the transport itself (pkt-lines, streaming, SSH windows, abandoned clones), whose requests read and
   * record nothing a store would answer differently: it runs on the first store only, each store-bound rule on both.
   */
  const transportIt = (title: string, test: () => Promise<void>, timeout?: number) => {
    if (name === backends[0]![0]) it(title, test, timeout)
  }

  // The SSH transport on the suite's services, as the server binary starts it.
  let sshPort = 0
  let sshScope: Scope.Closeable
  let keyDir: string
  beforeAll(async () => {
    sshScope = await Effect.runPromise(Scope.make())
    keyDir = await Fs.mkdtemp(Path.join((await import("node:os")).tmpdir(), "hostplane-ssh-host-"))
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

  const sshEnv = (key: GeneratedKey) => ({
    GIT_SSH_COMMAND: `ssh -i ${key.file} -o IdentitiesOnly=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o BatchMode=yes`
  })
  const sshUrl = (slug: string, project: string, repo: string) =>
    `ssh://git@127.0.0.1:${sshPort}/${slug}/${project}/${repo}.git`
  const registered = async (session: Session) => {
    const key = await generateKey("ed25519")
    const reply = await api.post("/v1/me/ssh-keys", { publicKey: key.publicKey }, { token: session.token })
    expect(reply.status).toBe(201)
    return { ...key, id: reply.body.id as string }
  }
  const refUpdates = async (slug: string, project: string, repo = "site") =>
    (await api.get(`${reposOf(slug, project)}/${repo}/ref-updates`, admin())).body.items

  // The git processes serving a fetch (upload-pack and its pack-objects, not a background repack) under this
  // process, the test server's host.
  const gitDescendants = async (serving = /upload-pack|pack-objects .*--stdout/) => {
    const parents = new Map<number, number>()
    const commands = new Map<number, string>()
    for (const name of await Fs.readdir("/proc")) {
      if (!/^\d+$/.test(name)) continue
      const stat = await Fs.readFile(`/proc/${name}/stat`, "utf8").catch(() => "")
      const cmdline = await Fs.readFile(`/proc/${name}/cmdline`, "utf8").catch(() => "")
      if (stat === "") continue
      parents.set(Number(name), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]))
      commands.set(Number(name), cmdline.replaceAll("\0", " "))
    }
    const descends = (pid: number): boolean => {
      for (let at = parents.get(pid); at !== undefined && at > 1; at = parents.get(at)) {
        if (at === process.pid) return true
      }
      return false
    }
    return [...commands].filter(([pid, command]) => serving.test(command) && descends(pid))
  }
  const repoIdOf = (projectId: string) =>
    suite.server.run(
      Effect.map(
        Effect.flatMap(Git.RepoStore, (store) => store.findByName(projectId as Kernel.ProjectId, "site")),
        (row) => Option.getOrThrow(row).id
      )
    )
  /** The fetch answers the storage keeps for a repository, and the drafts of those being recorded. */
  const keptAnswers = async (repoId: string) => {
    const names = await Fs.readdir(Path.join(suite.server.gitDir, ".fetch-cache")).catch(() => [] as Array<string>)
    const mine = names.filter((name) => name.startsWith(`${repoId}.`))
    return {
      kept: mine.filter((name) => !name.includes(".tmp-")),
      drafts: mine.filter((name) => name.includes(".tmp-"))
    }
  }
  /** Polls `check` every 100 ms for up to 10 s; its last answer. */
  const eventually = async <A>(check: () => Promise<A>, done: (a: A) => boolean) => {
    const deadline = Date.now() + 10_000
    let last = await check()
    while (!done(last) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      last = await check()
    }
    return last
  }
  /** Waits up to 10 s for every git process under this one to end; what is left. */
  const gitLeft = async () => {
    const deadline = Date.now() + 10_000
    let left = await gitDescendants()
    while (left.length > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      left = await gitDescendants()
    }
    return left
  }

  it("a private repo without, with bad, revoked or expired credentials, or a session token, is 401 with WWW-Authenticate Basic", async () => {
    const slug = await newOrg()
    const pushed = await pushedRepo(slug)
    const url = httpUrl(slug, pushed.project.name, "site")
    const revoked = await api.post("/v1/me/tokens", { name: "old" }, admin())
    await api.delete(`/v1/me/tokens/${revoked.body.id}`, undefined, admin())
    const expired = `${Git.accessTokenPrefix}${unique("expired")}`
    await suite.server.run(
      Effect.gen(function* () {
        yield* (yield* Git.CredentialStore).insertToken({
          id: Kernel.makeId("pat", unique("pat")),
          userId: Kernel.makeId("usr", suite.admin.userId),
          name: "expired",
          tokenHash: yield* (yield* Kernel.Tokens).hash(expired),
          createdAt: "2020-01-01T00:00:00.000Z",
          expiresAt: "2020-02-01T00:00:00.000Z",
          lastUsedAt: null,
          revokedAt: null
        })
      })
    )
    for (const password of [undefined, "svc_pat_nope", revoked.body.token, expired, suite.admin.token]) {
      const headers: Record<string, string> =
        password === undefined ? {} : { authorization: `Basic ${Buffer.from(`x:${password}`).toString("base64")}` }
      const reply = await fetch(`${url}/info/refs?service=git-upload-pack`, { headers })
      expect(reply.status, String(password)).toBe(401)
      expect(reply.headers.get("www-authenticate")).toBe('Basic realm="hostplane"')
    }
    const clone = await git(pushed.dir, ["clone", url, "anonymous"])
    expect(clone.code).not.toBe(0)
    const good = await git(pushed.dir, ["clone", withToken(url, pushed.token, "ignored-user"), "ok"])
    expect(good.code).toBe(0)
    await pushed.cleanup()
  })

  it("HTTP roles: viewer clones and fetches, a viewer push is 403, member and admin push; an outsider is 404", async () => {
    const slug = await newOrg()
    const pushed = await pushedRepo(slug)
    const url = httpUrl(slug, pushed.project.name, "site")
    const [viewer, member] = [await withRole(slug, "viewer"), await withRole(slug, "member")]
    const [viewerToken, memberToken, outsiderToken] = [
      await tokenOf(viewer),
      await tokenOf(member),
      await tokenOf(suite.outsider)
    ]
    await gitOk(pushed.dir, ["clone", "-q", withToken(url, viewerToken), "viewer"])
    const work = Path.join(pushed.dir, "viewer")
    await commitFiles(work, { "b.txt": "b\n" }, "second")
    const denied = await git(work, ["push", withToken(url, viewerToken), "HEAD:refs/heads/main"])
    expect(denied.code).not.toBe(0)
    expect(denied.stderr).toMatch(/403/)
    const probe = await fetch(`${url}/info/refs?service=git-receive-pack`, {
      headers: { authorization: `Basic ${Buffer.from(`x:${viewerToken}`).toString("base64")}` }
    })
    expect([probe.status, ((await probe.json()) as { code: string }).code]).toEqual([403, "forbidden"])
    await gitOk(work, ["push", "-q", withToken(url, memberToken), "HEAD:refs/heads/main"])
    await gitOk(work, ["push", "-q", withToken(url, pushed.token), "HEAD:refs/heads/admin-branch"])
    const outsider = await fetch(`${url}/info/refs?service=git-upload-pack`, {
      headers: { authorization: `Basic ${Buffer.from(`x:${outsiderToken}`).toString("base64")}` }
    })
    expect([outsider.status, ((await outsider.json()) as { code: string }).code]).toEqual([404, "not_found"])
    const updates = await refUpdates(slug, pushed.project.name)
    expect(updates.map((u: { ref: string; userId: string }) => [u.ref, u.userId])).toEqual([
      ["refs/heads/admin-branch", suite.admin.userId],
      ["refs/heads/main", member.userId],
      ["refs/heads/main", suite.admin.userId]
    ])
    await pushed.cleanup()
  })

  it("a public repo clones without credentials; pushing still needs a member (401 anonymous, 403 outsider or viewer)", async () => {
    const slug = await newOrg()
    const pushed = await pushedRepo(slug)
    await api.patch(`${reposOf(slug, pushed.project.name)}/site`, { visibility: "public" }, admin())
    const url = httpUrl(slug, pushed.project.name, "site")
    await gitOk(pushed.dir, ["clone", "-q", url, "anonymous"])
    expect(await gitOk(Path.join(pushed.dir, "anonymous"), ["rev-parse", "HEAD"])).toBe(pushed.commit)
    const outsiderToken = await tokenOf(suite.outsider)
    await gitOk(pushed.dir, ["clone", "-q", withToken(url, outsiderToken), "outsider"])
    const anonymous = await fetch(`${url}/info/refs?service=git-receive-pack`)
    expect(anonymous.status).toBe(401)
    const outsider = await fetch(`${url}/info/refs?service=git-receive-pack`, {
      headers: { authorization: `Basic ${Buffer.from(`x:${outsiderToken}`).toString("base64")}` }
    })
    expect(outsider.status).toBe(403)
    // Browsing still needs a session with viewer or higher.
    expect((await api.get(`${reposOf(slug, pushed.project.name)}/site/refs`)).status).toBe(401)
    expect(
      (await api.get(`${reposOf(slug, pushed.project.name)}/site/refs`, { token: suite.outsider.token })).status
    ).toBe(404)
    await pushed.cleanup()
  })

  it("an unknown repo is 401 without credentials and 404 with them; a deleted one too", async () => {
    const slug = await newOrg()
    const project = await suite.newProject(slug)
    const token = await tokenOf(suite.admin)
    const auth = { authorization: `Basic ${Buffer.from(`x:${token}`).toString("base64")}` }
    for (const path of [`${slug}/${project.name}/nope.git`, `${slug}/nope/site.git`, `nope-${slug}/x/site.git`]) {
      const base = `${suite.server.url}/git/${path}/info/refs?service=git-upload-pack`
      expect((await fetch(base)).status, path).toBe(401)
      expect((await fetch(base, { headers: auth })).status, path).toBe(404)
    }
  })

  it("force pushes, tags and branch deletions are recorded with old and new", async () => {
    const slug = await newOrg()
    const pushed = await pushedRepo(slug)
    const first = pushed.commit
    const second = await pushed.commitFiles({ "lost.txt": "only here\n" }, "to be lost")
    await gitOk(pushed.work, ["push", "-q", pushed.url, "HEAD:refs/heads/main", "HEAD:refs/heads/feature"])
    await gitOk(pushed.work, ["tag", "-a", "v1", "-m", "v1", first])
    await gitOk(pushed.work, ["push", "-q", pushed.url, "v1"])
    await gitOk(pushed.work, ["reset", "-q", "--hard", first])
    const rewritten = await pushed.commitFiles({ "new.txt": "rewritten\n" }, "rewritten")
    const refused = await git(pushed.work, ["push", pushed.url, "HEAD:refs/heads/main"])
    expect(refused.code).not.toBe(0)
    await gitOk(pushed.work, ["push", "-q", "--force", pushed.url, "HEAD:refs/heads/main"])
    await gitOk(pushed.work, ["push", "-q", pushed.url, ":refs/heads/feature"])
    const tag = await gitOk(pushed.work, ["rev-parse", "v1"])
    const updates = await refUpdates(slug, pushed.project.name)
    expect(updates).toHaveLength(6)
    expect(updates[0]).toMatchObject({ ref: "refs/heads/feature", old: second, new: null, userId: suite.admin.userId })
    expect(updates[1]).toMatchObject({ ref: "refs/heads/main", old: second, new: rewritten })
    expect(updates[2]).toMatchObject({ ref: "refs/tags/v1", old: null, new: tag })
    // One push of two refs: both recorded, in git's own order.
    expect(
      updates
        .slice(3, 5)
        .map((u: { ref: string; old: string | null; new: string | null }) => [u.ref, u.old, u.new])
        .sort()
    ).toEqual([
      ["refs/heads/feature", null, second],
      ["refs/heads/main", first, second]
    ])
    expect(updates.at(-1)).toMatchObject({ ref: "refs/heads/main", old: null, new: first })
    expect(updates.every((u: { at: string }) => new Date(u.at).toISOString() === u.at)).toBe(true)
    await pushed.cleanup()
  })

  transportIt("a commit lost to a force push stays fetchable by id and browsable", async () => {
    const slug = await newOrg()
    const pushed = await pushedRepo(slug)
    const repo = `${reposOf(slug, pushed.project.name)}/site`
    const first = pushed.commit
    const second = await pushed.commitFiles({ "lost.txt": "only here\n" }, "to be lost")
    await gitOk(pushed.work, ["push", "-q", pushed.url, "HEAD:refs/heads/main"])
    await gitOk(pushed.work, ["reset", "-q", "--hard", first])
    await pushed.commitFiles({ "new.txt": "rewritten\n" }, "rewritten")
    await gitOk(pushed.work, ["push", "-q", "--force", pushed.url, "HEAD:refs/heads/main"])
    // The lost commit: fetched by id into a fresh clone (protocol v2), and browsed by id.
    const { dir, cleanup } = await scratch()
    await gitOk(dir, ["clone", "-q", pushed.url, "fresh"])
    const fresh = Path.join(dir, "fresh")
    expect((await git(fresh, ["cat-file", "-e", second])).code).not.toBe(0)
    await gitOk(fresh, ["fetch", "-q", "origin", second])
    expect(await gitOk(fresh, ["show", `${second}:lost.txt`])).toBe("only here")
    const v0 = await git(fresh, ["-c", "protocol.version=0", "fetch", "-q", "origin", second])
    expect(v0.code).toBe(0)
    const browsed = await api.get(`${repo}/blob?ref=${second}&path=lost.txt`, admin())
    expect(browsed.body).toMatchObject({ ref: second, content: "only here\n" })
    await cleanup()
    await pushed.cleanup()
  })

  it("protocol v2 is passed through (Git-Protocol) and a gzip request body is read; v0 clones work too", async () => {
    const slug = await newOrg()
    const pushed = await pushedRepo(slug)
    const url = httpUrl(slug, pushed.project.name, "site")
    const auth = `Basic ${Buffer.from(`x:${pushed.token}`).toString("base64")}`
    const advertised = await fetch(`${url}/info/refs?service=git-upload-pack`, {
      headers: { authorization: auth, "git-protocol": "version=2" }
    })
    expect(advertised.headers.get("content-type")).toBe("application/x-git-upload-pack-advertisement")
    const capabilities = await advertised.text()
    expect(capabilities.startsWith(pkt("version 2\n"))).toBe(true)
    // git's own advertisement under the repository's configuration (uploadpack.allowFilter), answered from memory the
    // second time: the same bytes.
    const version = (await gitOk(pushed.dir, ["--version"])).trim().replace(/^git version /u, "")
    expect(capabilities).toContain(pkt(`agent=git/${version}\n`))
    expect(capabilities).toContain(pkt("fetch=shallow wait-for-done filter\n"))
    const again = await fetch(`${url}/info/refs?service=git-upload-pack`, {
      headers: { authorization: auth, "git-protocol": "version=2" }
    })
    expect([again.status, await again.text()]).toEqual([200, capabilities])
    const anonymous = await fetch(`${url}/info/refs?service=git-upload-pack`, {
      headers: { "git-protocol": "version=2" }
    })
    expect(anonymous.status).toBe(401)
    const body = gzipSync(Buffer.from(`${pkt("command=ls-refs\n")}0001${pkt("peel\n")}0000`))
    const listed = await fetch(`${url}/git-upload-pack`, {
      method: "POST",
      headers: {
        authorization: auth,
        "git-protocol": "version=2",
        "content-type": "application/x-git-upload-pack-request",
        "content-encoding": "gzip"
      },
      body
    })
    expect(listed.status).toBe(200)
    expect(listed.headers.get("content-type")).toBe("application/x-git-upload-pack-result")
    expect(await listed.text()).toContain(`${pushed.commit} refs/heads/main`)
    const v0 = await fetch(`${url}/info/refs?service=git-upload-pack`, { headers: { authorization: auth } })
    expect((await v0.text()).startsWith(`${pkt("# service=git-upload-pack\n")}0000`)).toBe(true)
    await gitOk(pushed.dir, ["-c", "protocol.version=0", "clone", "-q", pushed.url, "v0"])
    await pushed.cleanup()
  })

  it("a protocol v2 fetch is answered by git straight into the connection, close-delimited: the pack for a known want (gzip request too), git's own ERR line for an unknown one; a fetch without its final flush is 400", async () => {
    const slug = await newOrg()
    const pushed = await pushedRepo(slug)
    const url = new URL(`${httpUrl(slug, pushed.project.name, "site")}/git-upload-pack`)
    const post = (body: Uint8Array, headers: Record<string, string> = {}) =>
      new Promise<{ status: number; headers: Http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
        const request = Http.request(url, {
          method: "POST",
          headers: {
            authorization: `Basic ${Buffer.from(`x:${pushed.token}`).toString("base64")}`,
            "git-protocol": "version=2",
            "content-type": "application/x-git-upload-pack-request",
            "content-length": String(body.length),
            ...headers
          }
        })
        request.on("response", (response) => {
          const chunks: Array<Buffer> = []
          response.on("data", (chunk: Buffer) => chunks.push(chunk))
          response.on("end", () =>
            resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) })
          )
          response.on("error", reject)
        })
        request.on("error", reject)
        request.end(body)
      })
    const fetchOf = (want: string, end = "0000") =>
      Buffer.from(`${pkt("command=fetch\n")}0001${pkt("no-progress\n")}${pkt(`want ${want}\n`)}${pkt("done\n")}${end}`)
    for (const [body, headers] of [
      [fetchOf(pushed.commit), {}],
      [gzipSync(fetchOf(pushed.commit)), { "content-encoding": "gzip" }]
    ] as const) {
      const packed = await post(body, headers)
      expect(packed.status).toBe(200)
      expect(packed.headers["content-type"]).toBe("application/x-git-upload-pack-result")
      expect(packed.headers["connection"]).toBe("close")
      expect(packed.headers["transfer-encoding"]).toBeUndefined()
      expect(packed.body.toString("latin1")).toContain(pkt("packfile\n"))
      expect(packed.body.toString("latin1")).toContain("PACK")
      expect(packed.body.toString("latin1").endsWith("0000")).toBe(true)
    }
    const unknown = await post(fetchOf("1".repeat(40)))
    expect(unknown.status).toBe(200)
    expect(unknown.body.toString()).toContain(`ERR upload-pack: not our ref ${"1".repeat(40)}`)
    const cut = await post(fetchOf(pushed.commit, ""))
    expect([cut.status, JSON.parse(cut.body.toString()).code]).toEqual([400, "bad_request"])
    await gitOk(pushed.dir, ["-c", "protocol.version=2", "clone", "-q", pushed.url, "v2"])
    await pushed.cleanup()
  })

  it("hostile input: a bad pkt-line is 400, a wrong content type or encoding 415, dumb HTTP 403, a wrong method 405, traversal or an odd path 404", async () => {
    const slug = await newOrg()
    const pushed = await pushedRepo(slug)
    const url = httpUrl(slug, pushed.project.name, "site")
    const auth = { authorization: `Basic ${Buffer.from(`x:${pushed.token}`).toString("base64")}` }
    const post = (path: string, body: string | Uint8Array, type = "application/x-git-upload-pack-request") =>
      fetch(`${url}/${path}`, { method: "POST", headers: { ...auth, "content-type": type }, body })
    for (const garbage of ["zzzz", "0004", "ffffhello", "00"]) {
      const reply = await post("git-upload-pack", garbage)
      expect([reply.status, ((await reply.json()) as { code: string }).code], garbage).toEqual([400, "bad_request"])
    }
    const receive = await post("git-receive-pack", "zzzz", "application/x-git-receive-pack-request")
    expect(receive.status).toBe(400)
    expect((await post("git-upload-pack", "0000", "application/json")).status).toBe(415)
    // A body in an encoding other than gzip is never handed to git as if it were plain.
    for (const encoding of ["br", "deflate", "gzip, br"]) {
      const encoded = await fetch(`${url}/git-upload-pack`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/x-git-upload-pack-request", "content-encoding": encoding },
        body: "0000"
      })
      expect([encoded.status, ((await encoded.json()) as { code: string }).code], encoding).toEqual([
        415,
        "unsupported_media_type"
      ])
    }
    expect((await fetch(`${url}/info/refs`, { headers: auth })).status).toBe(403)
    expect((await fetch(`${url}/info/refs?service=git-shell`, { headers: auth })).status).toBe(403)
    expect((await fetch(`${url}/git-upload-pack`, { headers: auth })).status).toBe(405)
    for (const path of [
      `/git/${slug}/${pushed.project.name}/%2e%2e%2fsite.git/info/refs?service=git-upload-pack`,
      `/git/${slug}/%2e%2e/site.git/info/refs?service=git-upload-pack`,
      `/git/${slug}/${pushed.project.name}/site.git/objects/info/packs`,
      `/git/${slug}/${pushed.project.name}/site.git/HEAD`,
      `/git/${slug}/${pushed.project.name}/info/refs?service=git-upload-pack`,
      `/git/${slug}/${pushed.project.name}/site.git.git/info/refs?service=git-upload-pack`
    ]) {
      const reply = await fetch(`${suite.server.url}${path}`, { headers: auth })
      expect(reply.status, path).toBe(404)
    }
    // Bad percent-encoding never reaches git: 400 like any other route.
    const undecodable = await fetch(`${suite.server.url}/git/${slug}/${pushed.project.name}/%ZZ.git/info/refs`, {
      headers: auth
    })
    expect(undecodable.status).toBe(400)
    await pushed.cleanup()
  })

  /**
   * A repo whose main holds 24 MiB of random bytes, pushed once over HTTP by the first test that needs it: a pack that
   * outlasts the pipes' buffers while it is sent. The abandoned clones only read it.
   */
  let big:
    Promise<{ slug: string; pushed: Awaited<ReturnType<typeof pushedRepo>>; head: string; size: number }> | undefined
  const bigClone = () =>
    (big ??= (async () => {
      const slug = await newOrg()
      const pushed = await pushedRepo(slug)
      const size = 24 * 1024 * 1024
      await pushed.commitFiles({ "big.bin": randomBytes(size) }, "big")
      await gitOk(pushed.work, ["push", "-q", pushed.url, "HEAD:refs/heads/main"])
      return { slug, pushed, head: await gitOk(pushed.work, ["rev-parse", "HEAD"]), size }
    })())
  afterAll(async () => {
    if (big !== undefined) await (await big.catch(() => undefined))?.pushed.cleanup()
  })

  transportIt(
    "a large push streams through (far beyond the JSON body limit) and is browsable",
    async () => {
      const { slug, pushed, size } = await bigClone()
      const blob = await api.get(`${reposOf(slug, pushed.project.name)}/site/blob?path=big.bin`, admin())
      expect(blob.body).toMatchObject({ size, tooLarge: true, content: null })
    },
    bigPackDeadline
  )

  transportIt(
    "a clone abandoned mid-pack over HTTP leaves no git process behind",
    async () => {
      const { slug, pushed, head } = await bigClone()
      const abort = new AbortController()
      const reply = await uploadPack(httpUrl(slug, pushed.project.name, "site"), pushed.token, head, {
        signal: abort.signal
      })
      expect(reply.status).toBe(200)
      const first = await reply.body!.getReader().read()
      expect(first.done).toBe(false)
      // The client reads no further: git is still running, held back by the unread pack.
      expect(await gitDescendants()).not.toEqual([])
      abort.abort()
      expect(await gitLeft()).toEqual([])
      // What was recorded of git's answer for the fetch cache is dropped, never kept.
      const id = await repoIdOf(pushed.project.id)
      expect(
        await eventually(
          () => keptAnswers(id),
          (answers) => answers.drafts.length === 0
        )
      ).toEqual({
        kept: [],
        drafts: []
      })
    },
    bigPackDeadline
  )

  transportIt(
    "a clone abandoned mid-pack over SSH leaves no git process behind",
    async () => {
      const { slug, pushed, head } = await bigClone()
      const key = await registered(suite.admin)
      const ssh = spawn(
        "ssh",
        [
          ...sshEnv(key).GIT_SSH_COMMAND.split(" ").slice(1),
          "-p",
          String(sshPort),
          "git@127.0.0.1",
          `git-upload-pack '${slug}/${pushed.project.name}/site.git'`
        ],
        { stdio: ["pipe", "pipe", "ignore"] }
      )
      // Protocol v0: the ref advertisement, then one want and done; the pack follows.
      let received = 0
      let asked = false
      const packStarted = new Promise<void>((resolve) => {
        ssh.stdout.on("data", (chunk: Buffer) => {
          received += chunk.length
          if (!asked && chunk.toString("latin1").endsWith("0000")) {
            asked = true
            received = 0
            ssh.stdin.write(`${pkt(`want ${head}\n`)}0000${pkt("done\n")}`)
          } else if (asked && received > 256 * 1024) {
            ssh.stdout.pause()
            resolve()
          }
        })
      })
      await packStarted
      // The client reads no further: git is still running, held back by the unread pack.
      expect(await gitDescendants()).not.toEqual([])
      ssh.kill("SIGKILL")
      expect(await gitLeft()).toEqual([])
    },
    bigPackDeadline
  )

  transportIt(
    "a fresh fetch's answer is kept and sent again by a copy, not git, while the refs stay the same; abandoned while it is sent, it leaves no process behind",
    async () => {
      const { slug, pushed, head } = await bigClone()
      const id = await repoIdOf(pushed.project.id)
      const post = () =>
        uploadPack(httpUrl(slug, pushed.project.name, "site"), pushed.token, head, { lines: pkt("no-progress\n") })
      const whole = Buffer.from(await (await post()).arrayBuffer())
      expect(whole.toString("latin1")).toContain(pkt("packfile\n"))
      const { kept } = await eventually(
        () => keptAnswers(id),
        (answers) => answers.kept.length === 1
      )
      expect(kept).toHaveLength(1)
      // The kept answer is what git sent, byte for byte, and the next request gets it again.
      const file = Path.join(suite.server.gitDir, ".fetch-cache", kept[0]!)
      expect((await Fs.readFile(file)).equals(whole)).toBe(true)
      await Fs.utimes(file, new Date(Date.now() - 600_000), new Date(Date.now() - 600_000))
      const again = Buffer.from(await (await post()).arrayBuffer())
      expect(again.equals(whole)).toBe(true)
      expect((await Fs.stat(file)).mtimeMs).toBeGreaterThan(Date.now() - 60_000)
      const abort = new AbortController()
      const reply = await uploadPack(httpUrl(slug, pushed.project.name, "site"), pushed.token, head, {
        lines: pkt("no-progress\n"),
        signal: abort.signal
      })
      expect((await reply.body!.getReader().read()).done).toBe(false)
      // The client reads no further: the copy is held back by the unread answer, and no git runs for it.
      const copying = /^cat $|upload-pack|pack-objects .*--stdout/
      expect((await gitDescendants(copying)).map(([, command]) => command)).toEqual(["cat "])
      abort.abort()
      expect(
        await eventually(
          () => gitDescendants(copying),
          (left) => left.length === 0
        )
      ).toEqual([])
    },
    bigPackDeadline
  )

  /**
   * A raw protocol v2 session over SSH: `response()` waits for the server's next answer (pkt-lines up to a flush-pkt)
   * and gives its bytes; `received` counts every byte read so far.
   */
  const sshV2Session = (key: GeneratedKey, slug: string, project: string) => {
    const ssh = spawn(
      "ssh",
      [
        ...sshEnv(key).GIT_SSH_COMMAND.split(" ").slice(1),
        "-o",
        "SetEnv=GIT_PROTOCOL=version=2",
        "-p",
        String(sshPort),
        "git@127.0.0.1",
        `git-upload-pack '${slug}/${project}/site.git'`
      ],
      { stdio: ["pipe", "pipe", "pipe"] }
    )
    // Answers are cut out as the bytes arrive: a pkt-line header at a time, payloads skipped.
    const answers: Array<Buffer> = []
    let parts: Array<Buffer> = []
    let header = ""
    let remaining = 0
    let stderr = ""
    const state = { received: 0 }
    let waiting: (() => void) | undefined
    ssh.stdout.on("data", (chunk: Buffer) => {
      state.received += chunk.length
      let start = 0
      let at = 0
      while (at < chunk.length) {
        if (remaining > 0) {
          const skipped = Math.min(remaining, chunk.length - at)
          remaining -= skipped
          at += skipped
          continue
        }
        header += String.fromCharCode(chunk[at]!)
        at++
        if (header.length < 4) continue
        const length = Number.parseInt(header, 16)
        header = ""
        if (length === 0) {
          answers.push(Buffer.concat([...parts, chunk.subarray(start, at)]))
          parts = []
          start = at
        } else remaining = length < 4 ? 0 : length - 4
      }
      if (start < chunk.length) parts.push(chunk.subarray(start))
      waiting?.()
    })
    ssh.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    const exited = new Promise<number | null>((resolve) => ssh.once("exit", (code) => resolve(code)))
    const response = () =>
      new Promise<Buffer>((resolve) => {
        const attempt = () => {
          const answer = answers.shift()
          if (answer === undefined) return
          waiting = undefined
          resolve(answer)
        }
        waiting = attempt
        attempt()
      })
    return { ssh, state, response, exited, stderr: () => stderr }
  }

  transportIt(
    "over SSH a protocol v2 session is answered request by request as over HTTP: ls-refs, a fresh fetch kept and then read by the server itself with no git or copy running; abandoned while it is sent, it leaves no process or open file behind",
    async () => {
      const { slug, pushed, head } = await bigClone()
      const id = await repoIdOf(pushed.project.id)
      const key = await registered(suite.admin)
      // A request of its own (its agent line), so that its first answer is git's, recorded while it is sent.
      const fetchRequest = `${pkt("command=fetch\n")}${pkt("agent=hostplane-ssh-test\n")}0001${pkt("no-progress\n")}${pkt("ofs-delta\n")}${pkt(`want ${head}\n`)}${pkt("done\n")}0000`
      const first = sshV2Session(key, slug, pushed.project.name)
      expect((await first.response()).toString("latin1")).toContain("version 2")
      first.ssh.stdin.write(`${pkt("command=ls-refs\n")}0001${pkt("symrefs\n")}${pkt("ref-prefix HEAD\n")}0000`)
      expect((await first.response()).toString("latin1")).toContain(`${head} HEAD symref-target:refs/heads/main`)
      const kept = await keptAnswers(id)
      first.ssh.stdin.write(fetchRequest)
      const answer = await first.response()
      expect(answer.toString("latin1")).toContain(pkt("packfile\n"))
      // A lone flush-pkt ends the session, as git's own serve loop ends it.
      first.ssh.stdin.end("0000")
      expect(await first.exited).toBe(0)
      const recorded = await eventually(
        () => keptAnswers(id),
        (answers) => answers.kept.length > kept.kept.length && answers.drafts.length === 0
      )
      const added = recorded.kept.filter((name) => !kept.kept.includes(name))
      expect(added).toHaveLength(1)
      const file = Path.join(suite.server.gitDir, ".fetch-cache", added[0]!)
      expect((await Fs.readFile(file)).equals(answer)).toBe(true)

      // The same request again, twice in one session: the kept answer both times.
      const second = sshV2Session(key, slug, pushed.project.name)
      await second.response()
      second.ssh.stdin.write(fetchRequest)
      expect((await second.response()).equals(answer)).toBe(true)
      second.ssh.stdin.write(fetchRequest)
      expect((await second.response()).equals(answer)).toBe(true)
      second.ssh.stdin.end()
      expect(await second.exited).toBe(0)

      // Read from this process (the test server's): while the client holds back, no process serves it.
      const openOnKept = async () => {
        const fds = await Fs.readdir("/proc/self/fd")
        const targets = await Promise.all(fds.map((fd) => Fs.readlink(`/proc/self/fd/${fd}`).catch(() => "")))
        return targets.filter((target) => target === file).length
      }
      const third = sshV2Session(key, slug, pushed.project.name)
      await third.response()
      third.ssh.stdin.write(fetchRequest)
      await new Promise<void>((resolve) => {
        third.ssh.stdout.on("data", () => {
          if (third.state.received > 256 * 1024) {
            third.ssh.stdout.pause()
            resolve()
          }
        })
      })
      // (The test's own ssh client names upload-pack too.)
      const serving = /^(?!ssh )(?:cat $|tee |.*upload-pack|.*pack-objects .*--stdout)/
      expect(await gitDescendants(serving)).toEqual([])
      expect(await openOnKept()).toBe(1)
      third.ssh.kill("SIGKILL")
      expect(
        await eventually(
          () => openOnKept(),
          (open) => open === 0
        )
      ).toBe(0)
      expect(await gitDescendants(serving)).toEqual([])
    },
    bigPackDeadline
  )

  transportIt(
    "a fresh fetch arriving while git makes the same answer waits for it and gets the kept answer instead of running git again; when that git fails, the waiting fetch runs its own",
    async () => {
      const { slug, pushed, head } = await bigClone()
      const id = await repoIdOf(pushed.project.id)
      // A request of its own (its agent line), so that nothing kept answers it yet.
      const post = (agent: string, signal?: AbortSignal) =>
        uploadPack(httpUrl(slug, pushed.project.name, "site"), pushed.token, head, {
          agent,
          lines: pkt("no-progress\n"),
          ...(signal === undefined ? {} : { signal })
        })
      // The most upload-packs seen serving at once, sampled all along.
      let most = 0
      let sampling = true
      const sampler = (async () => {
        while (sampling) {
          most = Math.max(most, (await gitDescendants(/upload-pack/)).length)
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
      })()
      /** The one answer kept since `before`, once it is there; its bytes. */
      const keptSince = async (before: ReadonlyArray<string>) => {
        const kept = await eventually(
          () => keptAnswers(id),
          (answers) => answers.kept.length > before.length && answers.drafts.length === 0
        )
        const added = kept.kept.filter((name) => !before.includes(name))
        expect(added).toHaveLength(1)
        return await Fs.readFile(Path.join(suite.server.gitDir, ".fetch-cache", added[0]!))
      }
      /** A first fetch whose client reads a little and holds back (its git cannot finish), then a second one. */
      const leaderAndFollower = async (agent: string) => {
        const abort = new AbortController()
        const leader = await post(agent, abort.signal)
        const reader = leader.body!.getReader()
        const first = await reader.read()
        expect(first.done).toBe(false)
        await eventually(
          () => gitDescendants(/upload-pack/),
          (serving) => serving.length > 0
        )
        return { abort, reader, first: Buffer.from(first.value!), follower: post(agent) }
      }

      // The leader's client reads on: its answer is kept, and the follower gets the same bytes from it.
      const before = (await keptAnswers(id)).kept
      const held = await leaderAndFollower(`follower-${randomBytes(4).toString("hex")}`)
      const parts = [held.first]
      for (let read = await held.reader.read(); !read.done; read = await held.reader.read()) {
        parts.push(Buffer.from(read.value))
      }
      const answer = Buffer.concat(parts)
      expect(answer.toString("latin1")).toContain(pkt("packfile\n"))
      expect(Buffer.from(await (await held.follower).arrayBuffer()).equals(answer)).toBe(true)
      expect((await keptSince(before)).equals(answer)).toBe(true)

      // The leader's client goes: its git is stopped, its draft dropped, and the follower runs its own git.
      const again = (await keptAnswers(id)).kept
      const failed = await leaderAndFollower(`failed-${randomBytes(4).toString("hex")}`)
      failed.abort.abort()
      const own = Buffer.from(await (await failed.follower).arrayBuffer())
      expect(own.toString("latin1")).toContain(pkt("packfile\n"))
      expect((await keptSince(again)).equals(own)).toBe(true)
      sampling = false
      await sampler
      // Never a second git for the same answer while one was making it.
      expect(most, "upload-packs serving at once").toBeLessThanOrEqual(1)
    },
    bigPackDeadline
  )

  transportIt(
    "clones and fetches over HTTP and SSH see every push while fresh fetches are answered from the fetch cache: a new commit, a tag, a force push",
    async () => {
      const slug = await newOrg()
      const pushed = await pushedRepo(slug)
      // Large enough for its answer to be kept (the storage keeps answers of 1 MiB or more).
      await pushed.commitFiles({ "data.bin": randomBytes(2 * 1024 * 1024) }, "data")
      await gitOk(pushed.work, ["push", "-q", pushed.url, "HEAD:refs/heads/main"])
      const id = await repoIdOf(pushed.project.id)
      const key = await registered(suite.admin)
      const ssh = sshUrl(slug, pushed.project.name, "site")
      const { dir, cleanup } = await scratch()
      /** A fresh clone over each transport (protocol v2 over HTTP, twice); each one's HEAD, checked by fsck. */
      const clones = async (name: string) => {
        const heads: Array<string> = []
        for (const [url, env, target] of [
          [pushed.url, {}, `${name}-http`],
          [pushed.url, {}, `${name}-http-again`],
          [ssh, sshEnv(key), `${name}-ssh`]
        ] as const) {
          await gitOk(dir, ["-c", "protocol.version=2", "clone", "-q", "--mirror", url, target], env)
          await gitOk(Path.join(dir, target), ["fsck", "--no-progress", "--strict"])
          heads.push(await gitOk(Path.join(dir, target), ["rev-parse", "main"]))
          // The first clone's answer is being kept: the second one is sent from it.
          await eventually(
            () => keptAnswers(id),
            (answers) => answers.kept.length > 0 && answers.drafts.length === 0
          )
        }
        return heads
      }
      const first = await gitOk(pushed.work, ["rev-parse", "HEAD"])
      expect(await clones("one")).toEqual([first, first, first])
      const keptFirst = (await keptAnswers(id)).kept
      expect(keptFirst).toHaveLength(1)
      await gitOk(dir, ["clone", "-q", pushed.url, "work"])
      const lsRemote = async () => await gitOk(dir, ["-c", "protocol.version=2", "ls-remote", pushed.url])
      expect(await lsRemote()).toBe(`${first}\tHEAD\n${first}\trefs/heads/main`)
      expect(await lsRemote()).toBe(`${first}\tHEAD\n${first}\trefs/heads/main`)

      // A new commit: the next clone is git's answer on the new refs, kept in place of the old one.
      await pushed.commitFiles({ "more.txt": "more\n" }, "more")
      await gitOk(pushed.work, ["push", "-q", pushed.url, "HEAD:refs/heads/main"])
      const second = await gitOk(pushed.work, ["rev-parse", "HEAD"])
      expect(await lsRemote()).toBe(`${second}\tHEAD\n${second}\trefs/heads/main`)
      expect(await clones("two")).toEqual([second, second, second])
      const keptSecond = (
        await eventually(
          () => keptAnswers(id),
          (answers) => !answers.kept.includes(keptFirst[0]!)
        )
      ).kept
      expect(keptSecond).toHaveLength(1)
      expect(keptSecond).not.toEqual(keptFirst)
      // A fetch that has the old commit gets only what is new.
      await gitOk(Path.join(dir, "work"), ["fetch", "-q", "origin"])
      expect(await gitOk(Path.join(dir, "work"), ["rev-parse", "origin/main"])).toBe(second)

      // An annotated tag on the same commit: same objects wanted by a fetch of main, yet the refs changed.
      await gitOk(pushed.work, ["tag", "-a", "-m", "v1", "v1"])
      await gitOk(pushed.work, ["push", "-q", pushed.url, "v1"])
      const tag = await gitOk(pushed.work, ["rev-parse", "v1"])
      expect(await lsRemote()).toBe(
        `${second}\tHEAD\n${second}\trefs/heads/main\n${tag}\trefs/tags/v1\n${second}\trefs/tags/v1^{}`
      )
      await gitOk(dir, ["-c", "protocol.version=2", "clone", "-q", pushed.url, "tagged"])
      expect(await gitOk(Path.join(dir, "tagged"), ["rev-parse", "v1"])).toBe(tag)
      await gitOk(Path.join(dir, "work"), ["fetch", "-q", "origin"])
      expect(await gitOk(Path.join(dir, "work"), ["rev-parse", "v1"])).toBe(tag)

      // A force push back to the first commit: the clones get it again.
      await gitOk(pushed.work, ["push", "-q", "--force", pushed.url, `${first}:refs/heads/main`])
      const heads = await clones("three")
      expect(heads).toEqual([first, first, first])
      await cleanup()
      await pushed.cleanup()
    },
    bigPackDeadline
  )

  it("a rename while a push is running does not interrupt it: the push lands in the renamed repo and is recorded", async () => {
    const slug = await newOrg()
    const pushed = await pushedRepo(slug)
    const repos = reposOf(slug, pushed.project.name)
    const next = await pushed.commitFiles({ "during.txt": "pushed across a rename\n" }, "during")
    // The push as git sends it over smart HTTP: the ref command with report-status, then a pack of what main lacks.
    const pack = await new Promise<Buffer>((resolve, reject) => {
      const child = spawn("git", ["pack-objects", "--stdout", "--revs", "-q"], { cwd: pushed.work })
      const chunks: Array<Buffer> = []
      child.stdout.on("data", (chunk: Buffer) => chunks.push(chunk))
      child.on("error", reject)
      child.on("close", (code) => (code === 0 ? resolve(Buffer.concat(chunks)) : reject(new Error(`pack ${code}`))))
      child.stdin.end(`${next}\n^${pushed.commit}\n`)
    })
    const url = new URL(`${httpUrl(slug, pushed.project.name, "site")}/git-receive-pack`)
    const push = Http.request(url, {
      method: "POST",
      headers: {
        authorization: `Basic ${Buffer.from(`x:${pushed.token}`).toString("base64")}`,
        "content-type": "application/x-git-receive-pack-request"
      }
    })
    const answered = new Promise<{ status: number; body: string }>((resolve, reject) => {
      push.on("response", (response) => {
        const chunks: Array<Buffer> = []
        response.on("data", (chunk: Buffer) => chunks.push(chunk))
        response.on("end", () => resolve({ status: response.statusCode!, body: Buffer.concat(chunks).toString() }))
      })
      push.on("error", reject)
    })
    push.write(`${pkt(`${pushed.commit} ${next} refs/heads/main\0report-status\n`)}0000`)
    push.write(pack.subarray(0, 12))
    // receive-pack is running and holds the first bytes of the pack when the repo is renamed.
    const deadline = Date.now() + 10_000
    while ((await gitDescendants(/receive-pack/)).length === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    expect(await gitDescendants(/receive-pack/)).not.toEqual([])
    expect((await api.patch(`${repos}/site`, { name: "renamed" }, admin())).status).toBe(204)
    push.end(pack.subarray(12))
    const reply = await answered
    expect(reply.status).toBe(200)
    expect(reply.body).toContain("unpack ok")
    expect(reply.body).toContain("ok refs/heads/main")
    const refs = await api.get(`${repos}/renamed/refs`, admin())
    expect(refs.body.branches).toEqual([{ name: "main", commit: next }])
    expect((await refUpdates(slug, pushed.project.name, "renamed"))[0]).toMatchObject({
      ref: "refs/heads/main",
      old: pushed.commit,
      new: next,
      userId: suite.admin.userId
    })
    const blob = await api.get(`${repos}/renamed/blob?path=during.txt`, admin())
    expect(blob.body.content).toBe("pushed across a rename\n")
    expect((await api.get(`${repos}/site`, admin())).status).toBe(404)
    await pushed.cleanup()
  })

  it("git use sets a token's lastUsedAt; a token revoked right after a clone is refused at once (401 with the challenge)", async () => {
    const slug = await newOrg()
    const pushed = await pushedRepo(slug)
    const url = httpUrl(slug, pushed.project.name, "site")
    const created = await api.post("/v1/me/tokens", { name: "ci" }, admin())
    const unused = (await api.get("/v1/me/tokens", admin())).body.items.find(
      (token: { id: string }) => token.id === created.body.id
    )
    expect(unused.lastUsedAt).toBeNull()
    await gitOk(pushed.dir, ["clone", "-q", withToken(url, created.body.token), "used"])
    const used = (await api.get("/v1/me/tokens", admin())).body.items.find(
      (token: { id: string }) => token.id === created.body.id
    )
    expect(used.lastUsedAt).not.toBeNull()
    expect(Date.parse(used.lastUsedAt)).toBeGreaterThanOrEqual(Date.parse(created.body.createdAt))
    expect((await api.delete(`/v1/me/tokens/${created.body.id}`, undefined, admin())).status).toBe(204)
    const refused = await fetch(`${url}/info/refs?service=git-upload-pack`, {
      headers: { authorization: `Basic ${Buffer.from(`x:${created.body.token}`).toString("base64")}` }
    })
    expect(refused.status).toBe(401)
    expect(refused.headers.get("www-authenticate")).toBe('Basic realm="hostplane"')
    const fetchAgain = await git(Path.join(pushed.dir, "used"), ["fetch", "-q"])
    expect(fetchAgain.code).not.toBe(0)
    await pushed.cleanup()
  })

  it("SSH: a registered key clones and pushes (both URL forms); the push is recorded with its user", async () => {
    const slug = await newOrg()
    const project = await suite.newProject(slug)
    await createRepo(slug, project.name)
    const member = await withRole(slug, "member")
    const key = await registered(member)
    const { dir, cleanup } = await scratch()
    const work = await workingCopy(Path.join(dir, "work"), { "README.md": "over ssh\n" })
    await gitOk(work, ["push", "-q", sshUrl(slug, project.name, "site"), "HEAD:refs/heads/main"], sshEnv(key))
    const head = await gitOk(work, ["rev-parse", "HEAD"])
    const scpLike = `git@127.0.0.1:${slug}/${project.name}/site`
    await gitOk(dir, ["clone", "-q", scpLike, "scp"], {
      GIT_SSH_COMMAND: `${sshEnv(key).GIT_SSH_COMMAND} -p ${sshPort}`
    })
    expect(await gitOk(Path.join(dir, "scp"), ["rev-parse", "HEAD"])).toBe(head)
    await commitFiles(work, { "more.txt": "more\n" }, "more")
    await gitOk(
      work,
      ["push", "-q", "--force", sshUrl(slug, project.name, "site"), "HEAD:refs/heads/main"],
      sshEnv(key)
    )
    const updates = await refUpdates(slug, project.name)
    expect(updates.map((u: { old: string | null; userId: string }) => [u.old, u.userId])).toEqual([
      [head, member.userId],
      [null, member.userId]
    ])
    await cleanup()
  })

  transportIt(
    "SSH: an OpenSSH client is never sent more than 512 KiB ahead of what it passed on, and gets every byte",
    async () => {
      const slug = await newOrg()
      const pushed = await pushedRepo(slug)
      const big = randomBytes(6 * 1024 * 1024)
      await pushed.commitFiles({ "big.bin": big }, "big")
      await gitOk(pushed.work, ["push", "-q", pushed.url, "HEAD:refs/heads/main"])
      const key = await registered(suite.admin)
      // At DEBUG2 OpenSSH logs its window (2 MiB less what it holds unread) before each WINDOW_ADJUST it sends.
      const clone = await git(pushed.dir, ["clone", sshUrl(slug, pushed.project.name, "site"), "ssh"], {
        GIT_SSH_COMMAND: sshEnv(key).GIT_SSH_COMMAND.replace("LogLevel=ERROR", "LogLevel=DEBUG2")
      })
      expect(clone.code, clone.stderr).toBe(0)
      const windows = [...clone.stderr.matchAll(/window (\d+) sent adjust \d+/gu)].map((match) => Number(match[1]))
      expect(windows.length).toBeGreaterThan(10)
      expect(Math.min(...windows)).toBeGreaterThanOrEqual(2 * 1024 * 1024 - GitSshServer.openSshInFlight)
      // Buffer's own comparison: vitest's toEqual walks the 6 MiB byte by byte (seconds of CPU).
      expect((await Fs.readFile(Path.join(pushed.dir, "ssh", "big.bin"))).equals(big)).toBe(true)
      await pushed.cleanup()
    },
    bigPackDeadline
  )

  it("a never-pushed repo clones as an empty repository over HTTP and SSH", async () => {
    const slug = await newOrg()
    const project = await suite.newProject(slug)
    await createRepo(slug, project.name)
    const key = await registered(suite.admin)
    const { dir, cleanup } = await scratch()
    const http = await git(dir, [
      "clone",
      withToken(httpUrl(slug, project.name, "site"), await tokenOf(suite.admin)),
      "http"
    ])
    const ssh = await git(dir, ["clone", sshUrl(slug, project.name, "site"), "ssh"], sshEnv(key))
    for (const [name, ran] of [
      ["http", http],
      ["ssh", ssh]
    ] as const) {
      expect(ran.code, ran.stderr).toBe(0)
      expect(ran.stderr).toContain("empty repository")
      expect(await gitOk(Path.join(dir, name), ["for-each-ref"])).toBe("")
    }
    await cleanup()
  })

  it("SSH: tags, force pushes and branch deletions are recorded with old and new, like over HTTP", async () => {
    const slug = await newOrg()
    const pushed = await pushedRepo(slug)
    const url = sshUrl(slug, pushed.project.name, "site")
    const key = await registered(suite.admin)
    const first = pushed.commit
    const second = await pushed.commitFiles({ "b.txt": "b\n" }, "second")
    await gitOk(pushed.work, ["push", "-q", url, "HEAD:refs/heads/main", "HEAD:refs/heads/feature"], sshEnv(key))
    await gitOk(pushed.work, ["tag", "-a", "v1", "-m", "v1", first])
    await gitOk(pushed.work, ["push", "-q", url, "v1"], sshEnv(key))
    await gitOk(pushed.work, ["reset", "-q", "--hard", first])
    const rewritten = await pushed.commitFiles({ "c.txt": "c\n" }, "rewritten")
    await gitOk(pushed.work, ["push", "-q", "--force", url, "HEAD:refs/heads/main"], sshEnv(key))
    await gitOk(pushed.work, ["push", "-q", url, ":refs/heads/feature"], sshEnv(key))
    const tag = await gitOk(pushed.work, ["rev-parse", "v1"])
    const updates = (await refUpdates(slug, pushed.project.name)).slice(0, 3)
    expect(updates.map((u: { ref: string; old: string | null; new: string | null }) => [u.ref, u.old, u.new])).toEqual([
      ["refs/heads/feature", second, null],
      ["refs/heads/main", second, rewritten],
      ["refs/tags/v1", null, tag]
    ])
    const refs = await api.get(`${reposOf(slug, pushed.project.name)}/site/refs`, admin())
    expect(refs.body).toEqual({
      head: "main",
      branches: [{ name: "main", commit: rewritten }],
      tags: [{ name: "v1", commit: first }]
    })
    await pushed.cleanup()
  })

  it("after a push the repository is repacked into one pack with a bitmap in the background; a commit lost to a force push survives it", async () => {
    const slug = await newOrg()
    const pushed = await pushedRepo(slug)
    const lost = await pushed.commitFiles({ "lost.txt": "lost\n" }, "lost")
    await gitOk(pushed.work, ["push", "-q", pushed.url, "HEAD:refs/heads/main"])
    await gitOk(pushed.work, ["reset", "-q", "--hard", pushed.commit])
    await pushed.commitFiles({ "kept.txt": "kept\n" }, "kept")
    await gitOk(pushed.work, ["push", "-q", "--force", pushed.url, "HEAD:refs/heads/main"])
    const id = await suite.server.run(
      Effect.map(
        Effect.flatMap(Git.RepoStore, (store) => store.findByName(pushed.project.id, "site")),
        (row) => Option.getOrThrow(row).id
      )
    )
    const objects = Path.join(suite.server.gitDir, `${id}.git`, "objects")
    const packed = async () => {
      const loose = (await Fs.readdir(objects)).filter((name) => /^[0-9a-f]{2}$/.test(name))
      const packs = await Fs.readdir(Path.join(objects, "pack"))
      return (
        loose.length === 0 &&
        packs.filter((name) => name.endsWith(".pack")).length === 1 &&
        packs.some((name) => name.endsWith(".bitmap"))
      )
    }
    const deadline = Date.now() + 30_000
    while (!(await packed()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200))
    expect(await packed()).toBe(true)
    const { dir, cleanup } = await scratch()
    await gitOk(dir, ["clone", "-q", pushed.url, "fresh"])
    await gitOk(Path.join(dir, "fresh"), ["fetch", "-q", "origin", lost])
    expect(await gitOk(Path.join(dir, "fresh"), ["show", `${lost}:lost.txt`])).toBe("lost")
    await cleanup()
    await pushed.cleanup()
  })

  it("SSH: the same rules: a viewer's push is refused, an outsider's key sees no repo, any registered key reads a public repo", async () => {
    const slug = await newOrg()
    const pushed = await pushedRepo(slug)
    const url = sshUrl(slug, pushed.project.name, "site")
    const viewer = await withRole(slug, "viewer")
    const [viewerKey, outsiderKey] = [await registered(viewer), await registered(suite.outsider)]
    await gitOk(pushed.dir, ["clone", "-q", url, "viewer"], sshEnv(viewerKey))
    const work = Path.join(pushed.dir, "viewer")
    await commitFiles(work, { "v.txt": "v\n" }, "viewer change")
    const push = await git(work, ["push", url, "HEAD:refs/heads/main"], sshEnv(viewerKey))
    expect(push.code).not.toBe(0)
    expect(push.stderr).toContain("member role")
    const outsider = await git(pushed.dir, ["clone", url, "outsider"], sshEnv(outsiderKey))
    expect(outsider.code).not.toBe(0)
    expect(outsider.stderr).toContain("repository not found")
    await api.patch(`${reposOf(slug, pushed.project.name)}/site`, { visibility: "public" }, admin())
    await gitOk(pushed.dir, ["clone", "-q", url, "public"], sshEnv(outsiderKey))
    const outsiderPush = await git(
      Path.join(pushed.dir, "public"),
      ["push", url, "HEAD:refs/heads/x"],
      sshEnv(outsiderKey)
    )
    expect(outsiderPush.code).not.toBe(0)
    await pushed.cleanup()
  })

  it("SSH: an unregistered key is refused, a deleted key at once, and nothing but git-upload-pack and git-receive-pack runs", async () => {
    const slug = await newOrg()
    const pushed = await pushedRepo(slug)
    await api.patch(`${reposOf(slug, pushed.project.name)}/site`, { visibility: "public" }, admin())
    const url = sshUrl(slug, pushed.project.name, "site")
    const stranger = await generateKey("ed25519")
    const refused = await git(pushed.dir, ["clone", url, "stranger"], sshEnv(stranger))
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toMatch(/Permission denied/)
    const key = await registered(suite.admin)
    await gitOk(pushed.dir, ["ls-remote", url], sshEnv(key))
    const shell = await new Promise<{ code: number | null; stderr: string }>((resolve) =>
      execFile(
        "ssh",
        [...sshEnv(key).GIT_SSH_COMMAND.split(" ").slice(1), "-p", String(sshPort), "git@127.0.0.1", "ls /"],
        (error, _stdout, stderr) => resolve({ code: error === null ? 0 : (error.code as number), stderr })
      )
    )
    expect(shell.code).not.toBe(0)
    expect(shell.stderr).toContain("only git-upload-pack and git-receive-pack")
    expect((await api.delete(`/v1/me/ssh-keys/${key.id}`, undefined, admin())).status).toBe(204)
    const after = await git(pushed.dir, ["ls-remote", url], sshEnv(key))
    expect(after.code).not.toBe(0)
    expect(after.stderr).toMatch(/Permission denied/)
    await pushed.cleanup()
  })
})

describe.each([
  ["git_unavailable", () => GitStorageDisk.layer("/tmp", { gitBinary: "/nonexistent/git" })],
  ["git_unreachable", () => GitStorageDisk.layer("/dev/null/git")]
] as const)("git storage failures: %s is 503", (code, storage) => {
  const suite = useSuite(backends[1]![1], {}, undefined, undefined, { providers: [storage()] })
  const { reposOf, createRepo, httpUrl, tokenOf } = gitRepos(suite)

  it(`browsing and git transport answer 503 ${code}`, async () => {
    const slug = await suite.newOrg()
    const project = await suite.newProject(slug)
    await createRepo(slug, project.name)
    const refs = await suite.api.get(`${reposOf(slug, project.name)}/site/refs`, { token: suite.admin.token })
    expect([refs.status, refs.body.code]).toEqual([503, code])
    const token = await tokenOf(suite.admin)
    const reply = await fetch(`${httpUrl(slug, project.name, "site")}/info/refs?service=git-upload-pack`, {
      headers: { authorization: `Basic ${Buffer.from(`x:${token}`).toString("base64")}` }
    })
    expect([reply.status, ((await reply.json()) as { code: string }).code]).toEqual([503, code])
  })
})

describe.each(backends)("git storage lost during a PATCH (%s)", (_name, stores) => {
  // The storage's root is a folder that a test can swap for a file: then every repository is unreachable.
  const root = Path.join(tmpdir(), `hostplane-git-swap-${randomBytes(6).toString("hex")}`)
  const suite = useSuite(stores, {}, undefined, undefined, { providers: [GitStorageDisk.layer(root)] })
  const { reposOf, createRepo, httpUrl, tokenOf } = gitRepos(suite)
  const admin = () => ({ token: suite.admin.token })
  afterAll(async () => {
    await Fs.rm(root, { recursive: true, force: true })
    await Fs.rm(`${root}.away`, { recursive: true, force: true })
  })

  it("moving HEAD while the storage is unreachable is 503 git_unreachable and changes nothing; once it is back, the same PATCH moves HEAD", async () => {
    await Fs.mkdir(root, { recursive: true })
    const slug = await suite.newOrg()
    const project = await suite.newProject(slug)
    await createRepo(slug, project.name)
    const repo = `${reposOf(slug, project.name)}/site`
    const { dir, cleanup } = await scratch()
    const work = await workingCopy(Path.join(dir, "work"), { "README.md": "hi\n" })
    const url = withToken(httpUrl(slug, project.name, "site"), await tokenOf(suite.admin))
    await gitOk(work, ["push", "-q", url, "HEAD:refs/heads/main", "HEAD:refs/heads/trunk"])
    await Fs.rename(root, `${root}.away`)
    await Fs.writeFile(root, "not a folder")
    const lost = await suite.api.patch(repo, { defaultBranch: "trunk", visibility: "public" }, admin())
    expect([lost.status, lost.body.code]).toEqual([503, "git_unreachable"])
    await Fs.rm(root)
    await Fs.rename(`${root}.away`, root)
    expect((await suite.api.get(repo, admin())).body).toMatchObject({ defaultBranch: "main", visibility: "private" })
    expect((await suite.api.get(`${repo}/refs`, admin())).body.head).toBe("main")
    const again = await suite.api.patch(repo, { defaultBranch: "trunk" }, admin())
    expect(again.status).toBe(204)
    expect((await suite.api.get(`${repo}/refs`, admin())).body.head).toBe("trunk")
    expect((await git(dir, ["ls-remote", "--symref", url, "HEAD"])).stdout).toContain("ref: refs/heads/trunk\tHEAD")
    await cleanup()
  })
})
