import { createReadStream, createWriteStream } from "node:fs"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { pipeline } from "node:stream/promises"
import { Readable } from "node:stream"
import * as TarStream from "tar-stream"

/** Directories whose contents a base backup leaves out (PostgreSQL's own list); the directories themselves stay. */
const emptiedDirectories = new Set([
  "pg_wal",
  "pg_stat_tmp",
  "pg_replslot",
  "pg_dynshmem",
  "pg_notify",
  "pg_serial",
  "pg_snapshots",
  "pg_subtrans"
])
const skippedFiles = new Set([
  "postmaster.pid",
  "postmaster.opts",
  "pg_internal.init",
  "backup_label",
  "backup_label.old",
  "tablespace_map",
  "tablespace_map.old",
  "recovery.signal",
  "standby.signal"
])

/** Writes one entry, waiting for the tar to take it (the pack's backpressure reaches the reader). */
const entry = (
  pack: TarStream.Pack,
  header: Partial<TarStream.Header> & { readonly name: string },
  content?: Readable | Buffer
): Promise<void> =>
  new Promise((resolve, reject) => {
    // An entry of a destroyed pack (an abandoned backup) emits the pack's error: it rejects here, never uncaught.
    if (content === undefined || Buffer.isBuffer(content)) {
      pack.entry(header, content ?? Buffer.alloc(0), (error) => (error ? reject(error) : resolve())).on("error", reject)
      return
    }
    const sink = pack.entry(header, (error) => (error ? reject(error) : resolve()))
    sink.on("error", reject)
    pipeline(content, sink).catch(reject)
  })

/**
 * A file as its size was when listed: a live cluster changes files while they are copied (WAL replay repairs that),
 * so a file that grew is cut at the listed size and one that shrank is padded with zeros.
 */
async function* exactly(file: string, size: number): AsyncGenerator<Buffer> {
  let sent = 0
  if (size > 0) {
    const stream = createReadStream(file, { start: 0, end: size - 1 })
    try {
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        sent += chunk.byteLength
        yield chunk
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error
    }
  }
  while (sent < size) {
    const pad = Math.min(size - sent, 65536)
    sent += pad
    yield Buffer.alloc(pad)
  }
}

/**
 * Files up to this size are read, and extracted, whole: one call each instead of a stream, a generator and a pipeline
 * per file. Most of a cluster's thousand or so files are a few pages, so the streams' overhead was most of an image's CPU.
 */
const wholeFileLimit = 1024 * 1024

/** `exactly` in one read: the file as its size was when listed, cut or padded with zeros (a missing file is zeros). */
const readExactly = async (file: string, size: number): Promise<Buffer> => {
  const buffer = Buffer.alloc(size)
  const handle = await Fs.open(file, "r").catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return undefined
    throw error
  })
  if (handle === undefined) return buffer
  try {
    for (let at = 0; at < size;) {
      const { bytesRead } = await handle.read(buffer, at, size - at, at)
      if (bytesRead === 0) break
      at += bytesRead
    }
  } finally {
    await handle.close()
  }
  return buffer
}

/** A file's content for its tar entry: whole when small, else streamed. */
const contentOf = async (file: string, size: number): Promise<Readable | Buffer> =>
  size <= wholeFileLimit ? readExactly(file, size) : Readable.from(exactly(file, size), { objectMode: false })

/** Adds the cluster's files under `dataDir` to the tar (paths relative to it), skipping what a base backup skips. */
export const addDataDirectory = async (pack: TarStream.Pack, dataDir: string): Promise<void> => {
  const walk = async (relative: string): Promise<void> => {
    const absolute = Path.join(dataDir, relative)
    const names = (await Fs.readdir(absolute).catch(() => [])).sort()
    for (const name of names) {
      const path = relative === "" ? name : `${relative}/${name}`
      if (skippedFiles.has(name) || name.startsWith("pgsql_tmp")) continue
      const stat = await Fs.lstat(Path.join(dataDir, path)).catch(() => undefined)
      if (stat === undefined) continue
      if (stat.isDirectory()) {
        await entry(pack, { name: path, type: "directory", mode: stat.mode & 0o7777, mtime: stat.mtime })
        if (emptiedDirectories.has(path)) {
          if (path === "pg_wal") await entry(pack, { name: "pg_wal/archive_status", type: "directory", mode: 0o700 })
          continue
        }
        await walk(path)
      } else if (stat.isFile()) {
        await entry(
          pack,
          { name: path, type: "file", size: stat.size, mode: stat.mode & 0o7777, mtime: stat.mtime },
          await contentOf(Path.join(dataDir, path), stat.size)
        )
      }
    }
  }
  await walk("")
}

/** Adds a file of the cluster as it is now (WAL segments and history files after the backup stopped). */
export const addFile = async (pack: TarStream.Pack, dataDir: string, path: string): Promise<void> => {
  const absolute = Path.join(dataDir, path)
  const stat = await Fs.stat(absolute)
  await entry(
    pack,
    { name: path, type: "file", size: stat.size, mode: stat.mode & 0o7777, mtime: stat.mtime },
    await contentOf(absolute, stat.size)
  )
}

export const addText = (pack: TarStream.Pack, path: string, text: string): Promise<void> =>
  entry(pack, { name: path, type: "file", mode: 0o600 }, Buffer.from(text, "utf8"))

/** zlib's output piece for an image's restore: its default 16 KiB made every 16 KiB of the tar a job in the pool. */
export const gunzipChunk = 256 * 1024

/** Extracts a tar (already gunzipped) into `target`; an entry naming a path outside it is refused. */
export const extract = async (tar: Readable, target: string): Promise<void> => {
  const root = Path.resolve(target)
  await Fs.mkdir(root, { recursive: true, mode: 0o700 })
  const extractor = TarStream.extract()
  // Directories made so far: a file's folder is made once, not once per file.
  const made = new Set<string>([root])
  const folder = async (path: string, mode: number) => {
    if (made.has(path)) return
    await Fs.mkdir(path, { recursive: true, mode })
    made.add(path)
  }
  const done = (async () => {
    for await (const item of extractor) {
      const header = item.header
      const destination = Path.resolve(root, header.name)
      if (destination !== root && !destination.startsWith(root + Path.sep)) {
        throw new Error(`image entry outside the data directory: ${header.name}`)
      }
      if (header.type === "directory") {
        await folder(destination, header.mode ?? 0o700)
        item.resume()
      } else if (header.type === "file") {
        await folder(Path.dirname(destination), 0o700)
        const mode = header.mode ?? 0o600
        if ((header.size ?? 0) <= wholeFileLimit) {
          const chunks: Array<Buffer> = []
          for await (const chunk of item as AsyncIterable<Buffer>) chunks.push(chunk)
          await Fs.writeFile(destination, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), { mode })
        } else {
          await pipeline(item, createWriteStream(destination, { mode }))
        }
      } else {
        item.resume()
      }
    }
  })()
  await Promise.all([pipeline(tar, extractor), done])
}

/** Gives every file and directory under `root` to `uid:gid` (the server runs as `postgres` when we are root). */
export const chownTree = async (root: string, uid: number, gid: number): Promise<void> => {
  await Fs.chown(root, uid, gid)
  for (const entry of await Fs.readdir(root, { withFileTypes: true })) {
    const path = Path.join(root, entry.name)
    if (entry.isDirectory()) await chownTree(path, uid, gid)
    else await Fs.chown(path, uid, gid)
  }
}
