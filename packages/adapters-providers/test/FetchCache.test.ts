import { isFreshFetch, makeFetchCache, pktLines, refsDigest } from "@hostplane/adapters-providers/git/FetchCache"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterEach, describe, expect, it } from "vitest"

const pkt = (text: string) => `${(Buffer.byteLength(text) + 4).toString(16).padStart(4, "0")}${text}`
const bytes = (text: string) => new Uint8Array(Buffer.from(text, "latin1"))
const id = "a".repeat(40)

const dirs: Array<string> = []
const tempDir = async () => {
  const dir = await Fs.mkdtemp(Path.join(Os.tmpdir(), "hostplane-fetch-cache-"))
  dirs.push(dir)
  return dir
}
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => Fs.rm(dir, { recursive: true, force: true })))
})

const git = (cwd: string, args: Array<string>) =>
  execFileSync("git", args, {
    cwd,
    env: {
      PATH: process.env.PATH,
      GIT_CONFIG_NOSYSTEM: "1",
      HOME: cwd,
      GIT_AUTHOR_NAME: "t",
      GIT_AUTHOR_EMAIL: "t@example.test",
      GIT_COMMITTER_NAME: "t",
      GIT_COMMITTER_EMAIL: "t@example.test"
    }
  })
    .toString()
    .trim()

describe("FetchCache", () => {
  it("reads a request's pkt-lines (flush and delim as empty lines) and refuses anything else", () => {
    expect(pktLines(bytes(`${pkt("command=fetch\n")}0001${pkt("want x\n")}0000`))).toEqual([
      "command=fetch",
      "",
      "want x",
      ""
    ])
    expect(pktLines(bytes("00"))).toBeUndefined()
    expect(pktLines(bytes("zzzz"))).toBeUndefined()
    expect(pktLines(bytes("0003"))).toBeUndefined()
    expect(pktLines(bytes("0010short"))).toBeUndefined()
  })

  it("a fresh fetch wants something, has nothing and is done; anything else is answered by git each time", () => {
    const fetch = (...args: Array<string>) =>
      pktLines(bytes(`${pkt("command=fetch\n")}${pkt("agent=git/2\n")}0001${args.map(pkt).join("")}0000`))!
    expect(isFreshFetch(fetch("thin-pack\n", `want ${id}\n`, "done\n"))).toBe(true)
    expect(isFreshFetch(fetch(`want ${id}\n`, "deepen 1\n", "done\n"))).toBe(true)
    expect(isFreshFetch(fetch(`want ${id}\n`, `have ${id}\n`, "done\n"))).toBe(false)
    expect(isFreshFetch(fetch(`want ${id}\n`))).toBe(false)
    expect(isFreshFetch(fetch("done\n"))).toBe(false)
    expect(isFreshFetch(pktLines(bytes(`${pkt("command=ls-refs\n")}0001${pkt("done\n")}0000`))!)).toBe(false)
  })

  it("the refs digest changes with any ref, HEAD, packed-refs or a lock file, and with nothing else", async () => {
    const dir = await tempDir()
    git(dir, ["init", "-q", "--bare", "-b", "main", "repo.git"])
    const repo = Path.join(dir, "repo.git")
    const work = Path.join(dir, "work")
    git(dir, ["init", "-q", "-b", "main", "work"])
    await Fs.writeFile(Path.join(work, "a.txt"), "a\n")
    git(work, ["add", "a.txt"])
    git(work, ["commit", "-q", "-m", "a"])
    git(work, ["push", "-q", repo, "main"])
    const first = await refsDigest(repo)
    expect(first).toMatch(/^[0-9a-f]{40}$/u)
    expect(await refsDigest(repo)).toBe(first)
    // Objects alone (a push whose ref update failed keeps its pack) change nothing.
    await Fs.writeFile(Path.join(work, "b.txt"), "b\n")
    git(work, ["add", "b.txt"])
    git(work, ["commit", "-q", "-m", "b"])
    git(repo, ["fetch", "-q", work, "main"])
    expect(await refsDigest(repo)).toBe(first)
    const lock = Path.join(repo, "refs", "heads", "main.lock")
    await Fs.writeFile(lock, "")
    expect(await refsDigest(repo)).not.toBe(first)
    await Fs.rm(lock)
    expect(await refsDigest(repo)).toBe(first)
    git(work, ["tag", "v1"])
    git(work, ["push", "-q", repo, "v1"])
    const tagged = await refsDigest(repo)
    expect(tagged).not.toBe(first)
    git(repo, ["pack-refs", "--all"])
    const packed = await refsDigest(repo)
    expect(packed).not.toBe(tagged)
    git(repo, ["symbolic-ref", "HEAD", "refs/heads/other"])
    expect(await refsDigest(repo)).not.toBe(packed)
    expect(await refsDigest(Path.join(dir, "missing.git"))).toBeUndefined()
  })

  it("a repository whose packs hold less than minBytes is not worth keeping answers for", async () => {
    const dir = await tempDir()
    git(dir, ["init", "-q", "--bare", "repo.git"])
    const repo = Path.join(dir, "repo.git")
    expect(await makeFetchCache(dir).worthKeeping(repo)).toBe(false)
    await Fs.writeFile(Path.join(repo, "objects", "pack", "pack-1.pack"), Buffer.alloc(3000))
    await Fs.writeFile(Path.join(repo, "objects", "pack", "pack-2.pack"), Buffer.alloc(3000))
    expect(await makeFetchCache(dir, { minBytes: 8000 }).worthKeeping(repo)).toBe(false)
    expect(await makeFetchCache(dir, { minBytes: 6000 }).worthKeeping(repo)).toBe(true)
  })

  it("keeps an answer of at least minBytes under its repository, refs and request, and opens it by them", async () => {
    const dir = await tempDir()
    const cache = makeFetchCache(dir, { minBytes: 4 })
    const digest = cache.requestDigest("git 2", bytes("request"))
    expect(cache.requestDigest("git 2", bytes("request"))).toBe(digest)
    expect(cache.requestDigest("git 3", bytes("request"))).not.toBe(digest)
    const small = cache.draft("repo_a", "r1", digest)
    await Fs.writeFile(small, "abc")
    await cache.keep("repo_a", "r1", digest, small, 1_000_000)
    expect(await Fs.readdir(dir)).toEqual([])
    expect(await cache.open("repo_a", "r1", digest, 1_000_000)).toBeUndefined()
    const draft = cache.draft("repo_a", "r1", digest)
    await Fs.writeFile(draft, "answer")
    await cache.keep("repo_a", "r1", digest, draft, 1_000_000)
    const kept = await cache.open("repo_a", "r1", digest, 2_000_000)
    expect(kept?.bytes).toBe(6)
    expect((await kept!.fd.readFile()).toString()).toBe("answer")
    await kept!.fd.close()
    expect(await cache.open("repo_a", "r2", digest, 2_000_000)).toBeUndefined()
    expect(await cache.open("repo_b", "r1", digest, 2_000_000)).toBeUndefined()
  })

  it("an answer on new refs drops the repository's answers on older ones; at most perRepository are kept, the least recently read go first", async () => {
    const dir = await tempDir()
    const cache = makeFetchCache(dir, { minBytes: 0, perRepository: 2 })
    const keep = async (repo: string, refs: string, request: string, now: number) => {
      const draft = cache.draft(repo, refs, request)
      await Fs.writeFile(draft, request)
      await cache.keep(repo, refs, request, draft, now)
    }
    await keep("repo_a", "r1", "q1", 1_000_000)
    await keep("repo_b", "r1", "q1", 1_000_000)
    await keep("repo_a", "r2", "q1", 1_000_000)
    expect((await Fs.readdir(dir)).sort()).toEqual(["repo_a.r2.q1", "repo_b.r1.q1"])
    await keep("repo_a", "r2", "q2", 1_000_000)
    // Reading q1 makes it the most recently used: the next answer pushes q2 out.
    await Fs.utimes(Path.join(dir, "repo_a.r2.q2"), 900, 900)
    ;(await cache.open("repo_a", "r2", "q1", 1_000_000))!.fd.close()
    await keep("repo_a", "r2", "q3", 1_000_000)
    expect((await Fs.readdir(dir)).sort()).toEqual(["repo_a.r2.q1", "repo_a.r2.q3", "repo_b.r1.q1"])
    await cache.forget("repo_a")
    expect(await Fs.readdir(dir)).toEqual(["repo_b.r1.q1"])
  })

  it("answers and drafts nobody touched for maxAgeMs are swept when an answer is kept", async () => {
    const dir = await tempDir()
    const cache = makeFetchCache(dir, { minBytes: 0, maxAgeMs: 60_000 })
    const now = Date.now()
    const old = cache.draft("repo_a", "r1", "q1")
    await Fs.writeFile(old, "abandoned draft")
    await Fs.writeFile(Path.join(dir, "repo_b.r1.q1"), "unread answer")
    for (const name of await Fs.readdir(dir)) {
      await Fs.utimes(Path.join(dir, name), (now - 120_000) / 1000, (now - 120_000) / 1000)
    }
    const fresh = cache.draft("repo_c", "r1", "q1")
    await Fs.writeFile(fresh, "answer")
    await cache.keep("repo_c", "r1", "q1", fresh, now)
    expect(await Fs.readdir(dir)).toEqual(["repo_c.r1.q1"])
  })
})
