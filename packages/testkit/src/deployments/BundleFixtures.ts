import { randomBytes } from "node:crypto"
import { createGzip, gzipSync } from "node:zlib"
import { NodeStream } from "@effect/platform-node"
import { Effect, Stream } from "effect"
import * as TarStream from "tar-stream"

/** One tar entry of a test bundle. */
export interface BundleEntry {
  /** Bytes go verbatim into a plain ustar header (for names that are not UTF-8); text goes through tar-stream. */
  readonly name: string | Uint8Array
  /** Default `file`. */
  readonly type?: TarStream.Header["type"]
  readonly content?: string | Uint8Array
  readonly linkname?: string
  /** Extra pax records; present (even empty) forces a pax header whose `path` record carries `name`. */
  readonly pax?: Readonly<Record<string, string>>
}

const endOfArchive = 1024

/** The chunks as the pack emits them, not copied: the archive is joined once, in `tarOf`. */
const collect = async (readable: AsyncIterable<unknown>): Promise<Array<Uint8Array>> => {
  const chunks: Array<Uint8Array> = []
  for await (const chunk of readable) chunks.push(chunk as Uint8Array)
  return chunks
}

/** `chunks` without their last `bytes` bytes. */
const withoutTail = (chunks: Array<Uint8Array>, bytes: number): Array<Uint8Array> => {
  let left = bytes
  while (left > 0) {
    const last = chunks.pop()!
    if (last.byteLength > left) chunks.push(last.subarray(0, last.byteLength - left))
    left -= Math.min(left, last.byteLength)
  }
  return chunks
}

/** An entry's bytes: its text encoded, or none when it has no content. */
const contentOf = (entry: BundleEntry): Uint8Array =>
  typeof entry.content === "string" ? Buffer.from(entry.content) : (entry.content ?? Buffer.alloc(0))

const octal = (value: number, width: number) => value.toString(8).padStart(width - 1, "0") + "\0"

/** A ustar header and padded body written byte by byte, bypassing tar-stream's name encoding. */
const rawEntry = (name: Uint8Array, content: Uint8Array): Buffer => {
  const header = Buffer.alloc(512)
  header.set(name.subarray(0, 100), 0)
  header.write(octal(0o644, 8), 100, "latin1")
  header.write(octal(0, 8), 108, "latin1")
  header.write(octal(0, 8), 116, "latin1")
  header.write(octal(content.byteLength, 12), 124, "latin1")
  header.write(octal(0, 12), 136, "latin1")
  header.write("        ", 148, "latin1")
  header.write("0", 156, "latin1")
  header.write("ustar\0", 257, "latin1")
  header.write("00", 263, "latin1")
  const sum = header.reduce((total, byte) => total + byte, 0)
  header.write(sum.toString(8).padStart(6, "0") + "\0 ", 148, "latin1")
  const padding = Buffer.alloc((512 - (content.byteLength % 512)) % 512)
  return Buffer.concat([header, content, padding])
}

const packedEntry = async (entry: BundleEntry & { readonly name: string }): Promise<Array<Uint8Array>> => {
  const pack = TarStream.pack()
  const done = collect(pack)
  const content = contentOf(entry)
  const type = entry.type ?? "file"
  const header: Parameters<TarStream.Pack["entry"]>[0] = {
    name: entry.name,
    type,
    mtime: new Date(0),
    ...(entry.linkname === undefined ? {} : { linkname: entry.linkname }),
    ...(entry.pax === undefined ? {} : { pax: { ...entry.pax } })
  }
  if (type === "file" || type === "contiguous-file") pack.entry(header, content)
  else pack.entry(header).end(undefined)
  pack.finalize()
  return withoutTail(await done, endOfArchive)
}

/** The tar archive of `entries`, in order, ended by the two zero blocks. */
export const tarOf = (entries: ReadonlyArray<BundleEntry>): Effect.Effect<Uint8Array> =>
  Effect.promise(async () => {
    const parts: Array<Uint8Array> = []
    for (const entry of entries) {
      if (typeof entry.name === "string") parts.push(...(await packedEntry({ ...entry, name: entry.name })))
      else parts.push(rawEntry(entry.name, contentOf(entry)))
    }
    parts.push(Buffer.alloc(endOfArchive))
    return Buffer.concat(parts)
  })

/** The gzipped tar of `entries`: a bundle as a client uploads it. */
export const bundleOf = (entries: ReadonlyArray<BundleEntry>): Effect.Effect<Uint8Array> =>
  Effect.map(tarOf(entries), (tar) => gzipSync(tar))

/** `service.json` with `manifest` as its JSON text. */
export const manifestEntry = (manifest: unknown = { name: "site" }): BundleEntry => ({
  name: "service.json",
  content: JSON.stringify(manifest)
})

/** A small valid bundle layout: manifest, one worker file, two assets and their folders. */
export const sampleEntries: ReadonlyArray<BundleEntry> = [
  manifestEntry({ name: "site", main: "worker/index.js", database: true, ai: false }),
  { name: "worker/", type: "directory" },
  { name: "worker/index.js", content: "export default { fetch: () => new Response('hi') }\n" },
  { name: "assets/", type: "directory" },
  { name: "assets/index.html", content: "<!doctype html><h1>hi</h1>\n" },
  { name: "assets/css/app.css", content: "h1 { color: teal }\n" }
]

/**
 * `length` bytes where byte i is (i * step) % 251: one period made and doubled in place, the same bytes as
 * `new Uint8Array(length).map((_, i) => (i * step) % 251)` without a callback per byte (0.18-0.22 CPU-s per 9 MiB).
 */
export const patternBytes = (length: number, step: number): Uint8Array => {
  const bytes = new Uint8Array(length)
  for (let i = 0; i < Math.min(251, length); i++) bytes[i] = (i * step) % 251
  for (let filled = 251; filled < length; filled *= 2) bytes.copyWithin(filled, 0, filled)
  return bytes
}

/** Bytes as an upload delivers them: in chunks of `chunkSize`. */
export const streamOfBytes = (bytes: Uint8Array, chunkSize = 64 * 1024): Stream.Stream<Uint8Array> =>
  Stream.fromIterable(
    (function* () {
      for (let offset = 0; offset < bytes.byteLength; offset += chunkSize) {
        yield bytes.subarray(offset, Math.min(offset + chunkSize, bytes.byteLength))
      }
    })()
  )

export interface GeneratedBundle {
  /** Files `assets/file-<n>.bin` after the manifest. */
  readonly files: number
  readonly fileBytes: number
  /** `text`: one line repeated (inflates about a thousandfold); `random`: incompressible bytes. */
  readonly content: "text" | "random"
  /** gzip level, default 6; 0 stores the bytes uncompressed. */
  readonly level?: number
}

/**
 * A file is written 256 KiB at a time: each write is a turn of the tar and a job of zlib's in libuv's pool, and 16 KiB
 * writes made generating 4 x 50 MiB of text at level 1 cost 0.57 CPU-s instead of 0.18.
 */
const textBlock = Buffer.from(
  Array.from({ length: 256 * 1024 }, (_, i) => "hostplane bundle line\n".charCodeAt(i % 22))
)

/** Resolves once `sink` takes more bytes, or once it is closed (the reader stopped early). */
const writeAll = (sink: ReturnType<TarStream.Pack["entry"]>, data: Uint8Array) =>
  sink.write(data)
    ? Promise.resolve()
    : new Promise<void>((resolve) => {
        const done = () => {
          sink.off("drain", done)
          sink.off("close", done)
          resolve()
        }
        sink.on("drain", done)
        sink.on("close", done)
      })

/** A large bundle generated while it is read, never held in memory whole; stops when the reader stops. */
export const generatedBundle = (options: GeneratedBundle): Stream.Stream<Uint8Array> =>
  NodeStream.fromReadable({
    evaluate: () => {
      const pack = TarStream.pack()
      const gzip = createGzip({ level: options.level ?? 6 })
      // Stopping early (the reader refused the bundle) closes gzip, which destroys pack and the open entry.
      pack.on("error", () => {})
      pack.pipe(gzip, () => {})
      const fill = async () => {
        pack.entry({ name: "service.json" }, JSON.stringify({ name: "generated" }))
        for (let n = 0; n < options.files && !pack.destroying; n++) {
          const sink = pack.entry({ name: `assets/file-${n}.bin`, size: options.fileBytes })
          sink.on("error", () => {})
          const ended = new Promise<void>((resolve) => {
            sink.once("finish", () => resolve())
            sink.once("close", () => resolve())
          })
          for (let written = 0; written < options.fileBytes && !sink.destroying;) {
            const size = Math.min(textBlock.byteLength, options.fileBytes - written)
            await writeAll(sink, options.content === "text" ? textBlock.subarray(0, size) : randomBytes(size))
            written += size
          }
          if (!sink.destroying) sink.end(undefined)
          await ended
        }
        if (!pack.destroying) pack.finalize()
      }
      void fill()
      return gzip
    }
  }).pipe(Stream.orDie)
