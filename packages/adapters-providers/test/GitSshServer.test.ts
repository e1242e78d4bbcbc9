import { GitSshServer } from "@hostplane/adapters-providers"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import { createHash } from "node:crypto"
import { createRequire } from "node:module"
import { PassThrough, Writable } from "node:stream"
import type ssh2 from "ssh2"
import { describe, expect, it } from "vitest"

interface Ssh2Crypto {
  readonly CIPHER_INFO: Record<string, { readonly keyLen: number; readonly ivLen: number }>
  readonly createCipher: (config: unknown) => {
    allocPacket: (payloadLength: number) => Buffer
    encrypt: (packet: Buffer) => void
  }
}
const ssh2Crypto = createRequire(import.meta.url)("ssh2/lib/protocol/crypto.js") as Ssh2Crypto

describe("GitSshServer", () => {
  // Without the binding every 32 KiB SSH packet creates two ciphers, runs a WebAssembly Poly1305 and goes to the
  // socket in three writes: about 1.5x the server's CPU per clone (bench/README.md, bench:git). The root postinstall
  // builds it for the Node that runs the tests and the server.
  it("ssh2 encrypts with its native crypto binding under this Node", () => {
    expect(
      GitSshServer.cryptoBindingLoaded(),
      "ssh2's binding does not load under this Node: npm ci, or `node scripts/ssh2-binding.mjs`, rebuilds it"
    ).toBe(true)
  })

  // ssh2's native AEAD ciphers take their packets from the connection's pool: the same bytes as ssh2's own, in
  // buffers given back after each write (a fresh 32 KiB buffer per packet cost a mark-compact every few hundred ms).
  it.each(["chacha20-poly1305@openssh.com", "aes128-gcm@openssh.com", "aes256-gcm@openssh.com"])(
    "%s packets come from the pool, laid out and encrypted as ssh2's own",
    (name) => {
      const written: Array<Buffer> = []
      const info = ssh2Crypto.CIPHER_INFO[name]!
      const cipherOf = () =>
        ssh2Crypto.createCipher({
          outbound: {
            onWrite: (packet: Buffer) => written.push(Buffer.from(packet)),
            cipherInfo: info,
            cipherKey: Buffer.alloc(info.keyLen, 7),
            cipherIV: Buffer.alloc(info.ivLen, 3),
            seqno: 0
          }
        })
      const own = cipherOf()
      const pooled = cipherOf()
      const pool = GitSshServer.packetPool()
      expect(pool.adopt(pooled), `ssh2's ${name} cipher class is no longer recognized`).toBe(true)
      const lengths = [0, 1, 3, 4, 11, 12, 100, 32 * 1024 + 9, 40 * 1024]
      for (const length of lengths) {
        const payload = Buffer.alloc(length, length % 251)
        const mine = own.allocPacket(length)
        const theirs = pooled.allocPacket(length)
        expect([theirs.length, theirs.readUInt32BE(0), theirs[4]], `payload of ${length}`).toEqual([
          mine.length,
          mine.readUInt32BE(0),
          mine[4]
        ])
        expect(pool.lends(theirs)).toBe(length < 32 * 1024 + 32)
        // The padding is random: copy it over so both encrypt the same bytes.
        payload.copy(mine, 5)
        payload.copy(theirs, 5)
        theirs.copy(mine, 5 + length, 5 + length, mine.length - 16)
        own.encrypt(mine)
        pooled.encrypt(theirs)
        const [a, b] = written.splice(0, 2)
        expect(b!.equals(a!), `payload of ${length}`).toBe(true)
        if (pool.lends(theirs)) pool.release(theirs.buffer as ArrayBuffer)
      }
      // The padding is drawn from the CSPRNG in blocks, each byte used once: no two packets share theirs.
      const paddings = Array.from({ length: 600 }, () => {
        const packet = pooled.allocPacket(100)
        return packet.subarray(105, packet.length - 16).toString("hex")
      })
      expect(new Set(paddings).size).toBe(paddings.length)
      const first = pooled.allocPacket(100)
      pool.release(first.buffer as ArrayBuffer)
      expect(pooled.allocPacket(200).buffer).toBe(first.buffer)
      expect(pooled.allocPacket(200).buffer).not.toBe(first.buffer)
    }
  )

  it("parses the commands git sends over SSH, and nothing else", () => {
    expect(GitSshServer.parseGitCommand("git-upload-pack '/acme/web/site.git'")).toEqual({
      service: "upload-pack",
      path: { orgSlug: "acme", projectName: "web", repoName: "site" }
    })
    expect(GitSshServer.parseGitCommand("git receive-pack 'acme/web/it'\\''s.git'")).toEqual({
      service: "receive-pack",
      path: { orgSlug: "acme", projectName: "web", repoName: "it's" }
    })
    expect(GitSshServer.parseGitCommand("git-upload-archive 'acme/web/site.git'")).toBeUndefined()
    expect(GitSshServer.parseGitCommand("git-upload-pack 'acme/../site.git'")).toBeUndefined()
    expect(GitSshServer.parseGitCommand("sh -c 'id'")).toBeUndefined()
  })

  const pkt = (text: string) => `${(Buffer.byteLength(text) + 4).toString(16).padStart(4, "0")}${text}`
  const text = (request: GitSshServer.SessionRequest) =>
    "bytes" in request ? { ...request, bytes: Buffer.from(request.bytes).toString("latin1") } : request

  // serve.c's process_request: a request is its pkt-lines up to the first flush-pkt; a flush-pkt with nothing before
  // it, or the input's end between requests, ends the session.
  it("splits a protocol v2 session into its requests as git's serve loop does, however its bytes arrive", async () => {
    const lsRefs = `${pkt("command=ls-refs\n")}${pkt("agent=git/2.39\n")}0001${pkt("peel\n")}${pkt("ref-prefix HEAD\n")}0000`
    const fetch = `${pkt("command=fetch\n")}0001${pkt(`want ${"a".repeat(40)}\n`)}${pkt("done\n")}0000`
    const bare = `${pkt("command=ls-refs\n")}0000`
    const whole = Buffer.from(`${lsRefs}${fetch}${bare}0000`)
    for (const piece of [1, 3, 7, whole.length]) {
      const input = new PassThrough()
      const requests = GitSshServer.sessionRequests(input)
      for (let at = 0; at < whole.length; at += piece) input.write(whole.subarray(at, at + piece))
      expect(text(await requests.next()), `pieces of ${piece}`).toEqual({ _tag: "Request", bytes: lsRefs })
      expect(text(await requests.next())).toEqual({ _tag: "Request", bytes: fetch })
      expect(text(await requests.next())).toEqual({ _tag: "Request", bytes: bare })
      expect(await requests.next()).toEqual({ _tag: "End" })
    }
    // The input's end between requests ends the session too; inside one, what came is not a whole request.
    const ended = new PassThrough()
    const atEnd = GitSshServer.sessionRequests(ended)
    ended.end(fetch)
    expect(text(await atEnd.next())).toEqual({ _tag: "Request", bytes: fetch })
    expect(await atEnd.next()).toEqual({ _tag: "End" })
    const cut = new PassThrough()
    const inside = GitSshServer.sessionRequests(cut)
    cut.end(fetch.slice(0, 30))
    expect(text(await inside.next())).toEqual({ _tag: "Broken", bytes: fetch.slice(0, 30) })
  })

  it("a malformed pkt-line header is handed on as a broken request, and a request over the limit is refused unread", async () => {
    const bad = new PassThrough()
    const malformed = GitSshServer.sessionRequests(bad)
    bad.write(`${pkt("command=fetch\n")}00zzrest`)
    expect(text(await malformed.next())).toEqual({ _tag: "Broken", bytes: `${pkt("command=fetch\n")}00zz` })
    const short = new PassThrough()
    const three = GitSshServer.sessionRequests(short)
    short.write(`${pkt("command=fetch\n")}0003`)
    expect(text(await three.next())).toEqual({ _tag: "Broken", bytes: `${pkt("command=fetch\n")}0003` })
    const large = new PassThrough()
    const limited = GitSshServer.sessionRequests(large, 64 * 1024)
    const line = pkt(`want ${"b".repeat(40)}\n`)
    large.write(pkt("command=fetch\n") + "0001")
    for (let i = 0; i < 2000; i++) large.write(line)
    expect(await limited.next()).toEqual({ _tag: "TooLarge" })
    // Reading stopped past the limit: the rest stays with the client.
    expect(large.isPaused()).toBe(true)
  })

  // git's output goes into the channel through one reused read buffer: whatever the channel cannot send at once must
  // be copied, or a later read would overwrite bytes still waiting for the client's window (reading pauses then, but
  // Node resumes a child's unread stdout once the child has exited).
  it("relays git's output through one reused buffer, byte for byte, while the window runs out and refills", async () => {
    const bytes = 6 * 1024 * 1024
    // Deterministic bytes, written in uneven pieces so reads come in all sizes.
    const writer = `const b=Buffer.alloc(${bytes});for(let i=0;i<b.length;i++)b[i]=(i*7+(i>>>11))&255;let p=0;
      const next=()=>{while(p<b.length){const n=Math.min(1000+(p%90001),b.length-p);const ok=process.stdout.write(b.subarray(p,p+n));p+=n;if(!ok)return process.stdout.once('drain',next)}};next()`
    const child = spawn(process.execPath, ["-e", writer], { stdio: ["ignore", "pipe", "inherit"] })
    const received: Array<Buffer> = []
    let direct = 0
    let held = 0
    // ssh2's channel copies as much of a write into its packets as its window allows at once, and holds the rest (a
    // view of the caller's bytes) until the client's next window adjust.
    const channel = Object.assign(
      new Writable({
        highWaterMark: 2 * 1024 * 1024,
        write(chunk: Buffer, _encoding, done) {
          const send = (rest: Buffer) => {
            const now = Math.min(channel.outgoing.window, rest.length)
            received.push(Buffer.from(rest.subarray(0, now)))
            channel.outgoing.window -= now
            if (now === rest.length) return done()
            held++
            // As Node does to a child's unread stdout once the child has exited: reads may go on meanwhile.
            setImmediate(() => child.stdout.resume())
            setTimeout(() => {
              channel.outgoing.window += 150 * 1024
              send(rest.subarray(now))
            }, 2)
          }
          if (channel.outgoing.window >= chunk.length) direct++
          send(chunk)
        }
      }),
      { outgoing: { window: 200 * 1024 } }
    )
    // The storage reads git's first output before answering: it waits in the stream's own buffer.
    await new Promise<void>((resolve) => child.stdout.once("readable", resolve))
    const relay = GitSshServer.relayThroughOneBuffer(child.stdout, channel as unknown as ssh2.ServerChannel)
    expect(relay, "this Node's pipe sockets no longer take a user read buffer").toBeDefined()
    await Effect.runPromise(relay!)
    await new Promise<void>((resolve) => channel.end(resolve))
    const expected = Buffer.alloc(bytes)
    for (let i = 0; i < bytes; i++) expected[i] = (i * 7 + (i >>> 11)) & 255
    const all = Buffer.concat(received)
    expect(all.length).toBe(bytes)
    expect(createHash("sha256").update(all).digest("hex")).toBe(createHash("sha256").update(expected).digest("hex"))
    expect(direct).toBeGreaterThan(0)
    expect(held).toBeGreaterThan(0)
  })
})
