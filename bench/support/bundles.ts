// The bundles of `bench:upload` and `bench/upload-reader.ts`: gzipped tars of service.json, a worker and assets.
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import { createGzip } from "node:zlib"
import * as TarStream from "tar-stream"

// Bundles: service.json, a worker, and assets until the gzipped tar reaches the target size. Assets alternate
// between incompressible bytes (images, fonts) and text of random words (about 3:1 under gzip), 1 to 257 KiB each (most small).

const words = Array.from({ length: 2048 }, () => randomBytes(2 + Math.floor(Math.random() * 8)).toString("base64url"))

/** `bytes` of text of random words, about 3:1 under gzip. */
export const textOf = (bytes: number): Buffer => {
  const parts: Array<string> = []
  let length = 0
  while (length < bytes) {
    const word = words[Math.floor(Math.random() * words.length)]
    parts.push(word)
    length += word.length + 1
  }
  return Buffer.from(parts.join(" ")).subarray(0, bytes)
}

export interface BuiltBundle {
  readonly file: string
  readonly bytes: number
  readonly files: number
  readonly uncompressedBytes: number
}

export const buildBundle = (file: string, targetBytes: number) =>
  new Promise<BuiltBundle>((resolve, reject) => {
    const pack = TarStream.pack()
    const gzip = createGzip({ level: 6 })
    const out = Fs.createWriteStream(file)
    let written = 0
    let files = 0
    let uncompressedBytes = 0
    gzip.on("data", (chunk: Buffer) => (written += chunk.length))
    pack.pipe(gzip).pipe(out)
    pack.on("error", reject)
    gzip.on("error", reject)
    out.on("error", reject)
    out.on("finish", () => resolve({ file, bytes: written, files, uncompressedBytes }))
    const add = (name: string, content: Buffer) =>
      new Promise<void>((done, failed) => {
        files++
        uncompressedBytes += content.length
        pack.entry({ name, mtime: new Date(0) }, content, (error) => (error ? failed(error) : done()))
      })
    void (async () => {
      await add("service.json", Buffer.from(JSON.stringify({ name: "bench", main: "worker/index.js" })))
      await add("worker/index.js", Buffer.from("export default { fetch: () => new Response('bench') }\n"))
      // Stop a little short: gzip still holds buffered output, and the tar end adds a few bytes.
      while (written < targetBytes - 256 * 1024) {
        const size = 1024 + Math.floor(Math.random() ** 4 * 256 * 1024)
        const dir = `assets/d${files % 50}`
        const incompressible = files % 2 === 0
        // The entry's callback waits for the pack to drain into gzip: the build holds one file at a time.
        await add(
          `${dir}/f${files}.${incompressible ? "bin" : "txt"}`,
          incompressible ? randomBytes(size) : textOf(size)
        )
      }
      pack.finalize()
    })().catch(reject)
  })
