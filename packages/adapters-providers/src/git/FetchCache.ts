import { createHash, randomBytes } from "node:crypto"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"

/**
 * The pkt-lines of a whole protocol request as text without their newline (a flush, delim or response-end packet is
 * `""`), or undefined when the bytes are not whole pkt-lines.
 */
export const pktLines = (bytes: Uint8Array): Array<string> | undefined => {
  const lines: Array<string> = []
  let position = 0
  while (position < bytes.length) {
    if (position + 4 > bytes.length) return undefined
    const hex = Buffer.from(bytes.subarray(position, position + 4)).toString("latin1")
    if (!/^[0-9a-f]{4}$/u.test(hex)) return undefined
    const length = Number.parseInt(hex, 16)
    if (length === 3 || (length > 3 && position + length > bytes.length)) return undefined
    lines.push(
      length < 4
        ? ""
        : Buffer.from(bytes.subarray(position + 4, position + length))
            .toString("latin1")
            .replace(/\n$/u, "")
    )
    position += length < 4 ? 4 : length
  }
  return lines
}

/**
 * Whether a protocol v2 request is a fetch whose answer depends only on the request and the repository's refs: it
 * names what it wants and no `have` (a clone, a shallow clone, a first fetch) and ends the negotiation (`done`). Its
 * objects are then those the wanted ones reach, which never change (objects are named by their content and nothing
 * is pruned); the refs decide the rest (tags followed with `include-tag`, `deepen-not`, `want-ref`).
 */
export const isFreshFetch = (lines: ReadonlyArray<string>): boolean =>
  lines[0] === "command=fetch" &&
  lines.includes("done") &&
  lines.some((line) => line.startsWith("want ") || line.startsWith("want-ref ")) &&
  !lines.some((line) => line.startsWith("have "))

/** More loose refs than this and a repository's refs are not fingerprinted (its answers are not kept). */
const refsWalked = 4096

/**
 * A digest of everything git reads to resolve a repository's refs: HEAD, `packed-refs` and every file under `refs/`
 * (path and content, so lock files of an update in progress count too). Two equal digests mean the same refs.
 * Undefined when the repository is missing or has too many loose refs to read on every request.
 */
export const refsDigest = async (dir: string): Promise<string | undefined> => {
  const refs = await Fs.readdir(Path.join(dir, "refs"), { recursive: true, withFileTypes: true }).catch(() => undefined)
  if (refs === undefined || refs.length > refsWalked) return undefined
  const files = refs
    .filter((entry) => !entry.isDirectory())
    .map((entry) => Path.relative(dir, Path.join(entry.parentPath, entry.name)))
    .sort()
  const read = (name: string) => Fs.readFile(Path.join(dir, name)).catch(() => undefined)
  const contents = await Promise.all(["HEAD", "packed-refs", ...files].map(read))
  const hash = createHash("sha256")
  ;["HEAD", "packed-refs", ...files].forEach((name, index) => {
    const content = contents[index]
    hash.update(`${name}\0${content === undefined ? "-" : content.length}\0`)
    if (content !== undefined) hash.update(content)
  })
  return hash.digest("hex").slice(0, 40)
}

/** Options of the kept answers: how small an answer is not kept, how many per repository, and for how long. */
export interface FetchCacheOptions {
  readonly minBytes?: number
  readonly perRepository?: number
  readonly maxAgeMs?: number
}

/**
 * A kept answer, opened (so a concurrent eviction cannot take it away) with its size: what the disk storage hands a
 * transport that sends it from its own process (SSH encrypts every byte anyway) as the run's native output.
 */
export class KeptAnswer {
  readonly fd: Fs.FileHandle
  readonly bytes: number
  constructor(fd: Fs.FileHandle, bytes: number) {
    this.fd = fd
    this.bytes = bytes
  }
}

/**
 * Answers git gave to fresh fetches, kept on disk under `<dir>/<repo id>.<refs digest>.<request digest>` and reused
 * for the same request (byte for byte) on the same refs by the same git. A clone of a repository nobody pushed to
 * since its last clone then costs a file read instead of `upload-pack` and `pack-objects`, which is what a git host
 * serving many identical clones (CI) does: GitLab's Gitaly keeps pack-objects' output the same way. An answer is
 * written beside its final name and moved there only once git and the copy both ended well and the refs were the same
 * before and after, flushed first; a repository keeps only its current refs' answers, at most `perRepository` of
 * them, and an answer nobody read for `maxAgeMs` is removed.
 */
export const makeFetchCache = (dir: string, options: FetchCacheOptions = {}) => {
  const minBytes = options.minBytes ?? 1024 * 1024
  const perRepository = options.perRepository ?? 4
  const maxAgeMs = options.maxAgeMs ?? 60 * 60 * 1000
  let lastSweep = 0

  const nameOf = (repoId: string, refs: string, requestDigest: string) => `${repoId}.${refs}.${requestDigest}`

  /** The request's digest under the git that answers it. */
  const requestDigest = (gitVersion: string, request: Uint8Array) =>
    createHash("sha256").update(gitVersion).update("\0").update(request).digest("hex").slice(0, 40)

  const open = async (repoId: string, refs: string, digest: string, now: number): Promise<KeptAnswer | undefined> => {
    const file = Path.join(dir, nameOf(repoId, refs, digest))
    const fd = await Fs.open(file, "r").catch(() => undefined)
    if (fd === undefined) return undefined
    const stat = await fd.stat().catch(() => undefined)
    if (stat === undefined) {
      await fd.close().catch(() => {})
      return undefined
    }
    // Its modification time is when it was last read: what the age limit counts from.
    await Fs.utimes(file, now / 1000, now / 1000).catch(() => {})
    return new KeptAnswer(fd, stat.size)
  }

  /**
   * Whether a repository's answers may be large enough to keep: its packs together hold at least `minBytes` (an
   * answer holds at most the objects stored). A smaller repository's fetches are answered by git alone, not recorded.
   */
  const worthKeeping = async (repository: string) => {
    const packs = Path.join(repository, "objects", "pack")
    const names = await Fs.readdir(packs).catch(() => [] as Array<string>)
    let bytes = 0
    for (const name of names.filter((name) => name.endsWith(".pack"))) {
      bytes += (await Fs.stat(Path.join(packs, name)).catch(() => undefined))?.size ?? 0
      if (bytes >= minBytes) return true
    }
    return false
  }

  /** A new file name to record an answer into, beside its final name. */
  const draft = (repoId: string, refs: string, digest: string) =>
    Path.join(dir, `${nameOf(repoId, refs, digest)}.tmp-${randomBytes(6).toString("hex")}`)

  const entries = async () => {
    const names = await Fs.readdir(dir).catch(() => [] as Array<string>)
    const stated = await Promise.all(
      names.map(async (name) => {
        const stat = await Fs.stat(Path.join(dir, name)).catch(() => undefined)
        return stat === undefined ? undefined : { name, mtimeMs: stat.mtimeMs }
      })
    )
    return stated.filter((entry) => entry !== undefined)
  }

  const unlink = (name: string) => Fs.unlink(Path.join(dir, name)).catch(() => {})

  /**
   * Keeps a recorded answer when it is large enough, flushed to disk first (a kept answer cut short by a crash would
   * be sent as it is), then drops what it makes stale: the repository's answers on other refs, those beyond
   * `perRepository`, and anything unread for `maxAgeMs` (looked for at most once a minute).
   */
  const keep = async (repoId: string, refs: string, digest: string, file: string, now: number) => {
    const stat = await Fs.stat(file).catch(() => undefined)
    if (stat === undefined || stat.size < minBytes) return unlink(Path.basename(file))
    const written = await Fs.open(file, "r+")
    await written.datasync().finally(() => written.close())
    await Fs.rename(file, Path.join(dir, nameOf(repoId, refs, digest)))
    const all = await entries()
    const mine = all
      .filter((entry) => entry.name.startsWith(`${repoId}.`) && !entry.name.includes(".tmp-"))
      .sort((a, b) => b.mtimeMs - a.mtimeMs)
    const stale = mine.filter((entry, index) => !entry.name.startsWith(`${repoId}.${refs}.`) || index >= perRepository)
    const sweep = now - lastSweep >= 60_000
    if (sweep) lastSweep = now
    const old = sweep ? all.filter((entry) => now - entry.mtimeMs > maxAgeMs) : []
    await Promise.all([...new Set([...stale, ...old].map((entry) => entry.name))].map(unlink))
  }

  /** Drops a repository's answers (it is being removed). */
  const forget = async (repoId: string) => {
    const names = await Fs.readdir(dir).catch(() => [] as Array<string>)
    await Promise.all(names.filter((name) => name.startsWith(`${repoId}.`)).map(unlink))
  }

  return {
    requestDigest,
    open,
    worthKeeping,
    draft,
    keep,
    forget,
    unlink: (file: string) => unlink(Path.basename(file))
  }
}

export type FetchCache = ReturnType<typeof makeFetchCache>
