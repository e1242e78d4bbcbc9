import { NodeStream } from "@effect/platform-node"
import { Git, type Kernel } from "@hostplane/core"
import { Context, Effect, Layer, Option, Stream } from "effect"
import { generateKeyPairSync, randomFillSync } from "node:crypto"
import * as Fs from "node:fs/promises"
import { createRequire } from "node:module"
import * as NodeFs from "node:fs"
import { type AddressInfo, createServer, Socket as NetSocket, type Socket } from "node:net"
import * as Path from "node:path"
import type { Readable } from "node:stream"
import ssh2 from "ssh2"
import { inDataDir } from "../DataDir.ts"
import { KeptAnswer } from "./FetchCache.ts"
import { fingerprintOf } from "./SshKeyParserSsh2.ts"

/** The running SSH transport: where it listens. */
export class GitSshServer extends Context.Service<GitSshServer, { readonly host: string; readonly port: number }>()(
  "@hostplane/adapters-providers/git/GitSshServer"
) {}

export interface GitSshServerOptions {
  readonly host: string
  /** 0 picks a free port (tests). */
  readonly port: number
  /** The host key, generated there (ECDSA P-256, mode 0600) on first start and reused after. */
  readonly hostKeyPath: string
}

/** The host key at `path`, made once. */
const hostKeyAt = (path: string) =>
  Effect.promise(async () => {
    const existing = await Fs.readFile(path, "utf8").catch(() => undefined)
    if (existing !== undefined) return existing.trim()
    const { privateKey } = generateKeyPairSync("ec", {
      namedCurve: "prime256v1",
      privateKeyEncoding: { type: "sec1", format: "pem" },
      publicKeyEncoding: { type: "spki", format: "pem" }
    })
    await Fs.mkdir(Path.dirname(path), { recursive: true })
    await Fs.writeFile(path, privateKey, { mode: 0o600, flag: "wx" }).catch(() => undefined)
    return (await Fs.readFile(path, "utf8")).trim()
  })

/**
 * Whether ssh2 encrypts with its native binding under this Node. Without it (built for another Node's ABI, or not at
 * all) ssh2 falls back to creating ciphers and a WebAssembly Poly1305 per 32 KiB packet and writes every packet in
 * three pieces, about 1.5x the server's CPU per SSH clone; the root postinstall (scripts/ssh2-binding.mjs) rebuilds
 * it for the Node that runs hostplane. Asked at the first SSH connection: ssh2's crypto module compiles its
 * WebAssembly when loaded.
 */
export const cryptoBindingLoaded = (): boolean =>
  (createRequire(import.meta.url)("ssh2/lib/protocol/crypto.js") as { readonly bindingAvailable: boolean })
    .bindingAvailable

/**
 * The most the server sends to an OpenSSH client before the client has passed it on. OpenSSH grants a 2 MiB window
 * and returns what it has written out as soon as more than 3 packets (96 KiB) are outstanding (channels.c,
 * `channel_check_window`, unchanged from OpenSSH 6 to 10). Sending all 2 MiB at once made it hold megabytes in buffers
 * it regrows by reallocating: about 100,000 page faults and 0.3-0.4 s of its CPU per 50 MiB clone, against 8,000 and
 * 0.2 s with at most 512 KiB in flight (bench/README.md, bench:git). 128 KiB stalled: too close to those 96 KiB.
 */
export const openSshInFlight = 512 * 1024

/**
 * Lowers the send window ssh2 keeps for `channel` (the client's grant) to `limit`: its own flow control then waits for
 * the client's WINDOW_ADJUSTs, which add what was passed on, so at most `limit` is ever unread. Only for a client that
 * adjusts early (OpenSSH): one that waits until half its window is used would never adjust and the transfer would stall.
 */
const limitInFlight = (channel: ssh2.ServerChannel, limit: number) => {
  const outgoing = channel.outgoing as { window?: unknown }
  if (typeof outgoing.window === "number") outgoing.window = Math.min(outgoing.window, limit)
}

// The largest packet the server sends: a 32 KiB CHANNEL_DATA payload (OpenSSH's and ssh2's packet size) with its
// header, at most 19 bytes of padding and the 16-byte tag.
const pooledPacketBytes = 32 * 1024 + 64

interface OutgoingCipher {
  allocPacket: (payloadLength: number) => Buffer
}

/**
 * The native ciphers of ssh2 whose packets the pool lays out, by class name, with the block their padding rounds to
 * (lib/protocol/crypto.js, `allocPacket`): chacha20-poly1305 (OpenSSH's default) and AES-GCM (the first choice of
 * Go's x/crypto/ssh clients, and of OpenSSH's with `-c aes128-gcm@openssh.com`).
 */
const pooledCiphers: Record<string, number> = { ChaChaPolyCipherBinding: 8, AESGCMCipherBinding: 16 }

/**
 * The buffers of one connection's outgoing packets: ssh2 allocates a fresh 32 KiB buffer for every packet, 50 MiB of
 * external memory per 50 MiB clone, and V8 answers that much external memory with a mark-compact of the whole heap
 * every few hundred milliseconds (bench/README.md, bench:git). A buffer is lent to one packet and given back once the
 * socket has written it; at most 64 are kept.
 */
export const packetPool = () => {
  const free: Array<ArrayBuffer> = []
  const lent = new WeakSet<ArrayBuffer>()
  const entropy = Buffer.alloc(4096)
  let entropyUsed = entropy.length
  return {
    lends: (chunk: unknown): chunk is Buffer =>
      chunk instanceof Uint8Array && chunk.buffer instanceof ArrayBuffer && lent.has(chunk.buffer),
    release: (buffer: ArrayBuffer) => {
      if (!lent.has(buffer)) return
      lent.delete(buffer)
      if (free.length < 64) free.push(buffer)
    },
    /**
     * Makes `cipher` take its packets from the pool when it is one of `pooledCiphers`; false for any other cipher,
     * which keeps ssh2's own allocation. The layout is ssh2's `allocPacket` for that cipher (lib/protocol/crypto.js):
     * length, padding length, payload, random padding to a multiple of the cipher's block, 16-byte tag.
     */
    adopt: (cipher: OutgoingCipher): boolean => {
      const block = pooledCiphers[cipher.constructor.name]
      if (block === undefined) return false
      const own = cipher.allocPacket.bind(cipher)
      cipher.allocPacket = (payloadLength: number) => {
        let packetLength = 4 + 1 + payloadLength
        let padding = block - ((packetLength - 4) & (block - 1))
        if (padding < 4) padding += block
        packetLength += padding
        if (packetLength + 16 > pooledPacketBytes) return own(payloadLength)
        const buffer = free.pop() ?? new ArrayBuffer(pooledPacketBytes)
        lent.add(buffer)
        const packet = Buffer.from(buffer, 0, packetLength + 16)
        packet.writeUInt32BE(packetLength - 4, 0)
        packet[4] = padding
        // Random padding from a block drawn 4 KiB at a time, each byte used once: one call into the CSPRNG per
        // few hundred packets instead of one per packet.
        if (entropyUsed + padding > entropy.length) {
          randomFillSync(entropy)
          entropyUsed = 0
        }
        entropy.copy(packet, 5 + payloadLength, entropyUsed, entropyUsed + padding)
        entropyUsed += padding
        return packet
      }
      return true
    }
  }
}

/**
 * Puts a connection's outgoing packets in a `packetPool`: each cipher ssh2 installs (after every key exchange) adopts
 * the pool, and a pooled packet's socket write gives its buffer back when it completes.
 */
const reusePacketBuffers = (client: ssh2.Connection) => {
  const internals = client as unknown as {
    readonly _sock: Socket | undefined
    readonly _protocol: { _cipher: OutgoingCipher | undefined } | undefined
  }
  const socket = internals._sock
  const protocol = internals._protocol
  // Internals another ssh2 version may lay out otherwise: without them the connection keeps ssh2's own packets.
  if (typeof socket?.write !== "function" || typeof protocol !== "object") return
  const pool = packetPool()
  const write = socket.write
  socket.write = function (this: Socket, chunk: unknown, ...rest: Array<unknown>) {
    if (rest.length > 0 || !pool.lends(chunk))
      return (write as (...args: Array<unknown>) => boolean).call(this, chunk, ...rest)
    const buffer = chunk.buffer as ArrayBuffer
    return write.call(this, chunk, undefined, () => pool.release(buffer))
  } as typeof socket.write
  let cipher = protocol._cipher
  if (typeof cipher === "object" && cipher !== null) pool.adopt(cipher)
  Object.defineProperty(protocol, "_cipher", {
    configurable: true,
    get: () => cipher,
    set: (next: OutgoingCipher | undefined) => {
      if (typeof next === "object" && next !== null) pool.adopt(next)
      cipher = next
    }
  })
}

interface ReadHandle {
  readonly useUserBuffer: (buffer: Uint8Array) => void
}

/**
 * Hands git's output (`nativeOutput`, a Node pipe socket) to `channel` through one reused read buffer, or undefined when
 * this Node lays out its sockets otherwise (then the caller streams it as usual). Every read of a pipe otherwise lands
 * in a fresh 64 KiB buffer: 50 MiB of external memory per 50 MiB clone, which V8 answers with mark-compacts of the
 * server's whole heap, the largest share of its CPU per SSH clone after the write syscalls (bench/README.md). It uses
 * the per-read callback Node's own `net.Socket` `onread` option installs (a user buffer on the handle, then the
 * socket's `kBuffer` and `kBufferCb`): ssh2 copies a write into its packets before `write` returns when the channel
 * has nothing queued and window for all of it, so the buffer is free again when the callback returns; otherwise
 * the bytes are copied into a spare buffer (given back once the channel has sent them) and reading pauses until then.
 * Completes once git's output ended (all of it handed to the channel).
 */
export const relayThroughOneBuffer = (
  output: unknown,
  channel: ssh2.ServerChannel
): Effect.Effect<void> | undefined => {
  if (!(output instanceof NetSocket)) return undefined
  const symbols = Object.getOwnPropertySymbols(output)
  const bufferKey = symbols.find((symbol) => symbol.description === "kBuffer")
  const callbackKey = symbols.find((symbol) => symbol.description === "kBufferCb")
  const handle = (output as unknown as { readonly _handle: Partial<ReadHandle> | null })._handle
  if (bufferKey === undefined || callbackKey === undefined || typeof handle?.useUserBuffer !== "function") {
    return undefined
  }
  const useUserBuffer = handle.useUserBuffer.bind(handle)
  return Effect.callback<void>((resume) => {
    if (output.readableEnded) return resume(Effect.void)
    const fields = output as unknown as Record<symbol, unknown>
    const buffer = Buffer.allocUnsafe(64 * 1024)
    const spare: Array<Buffer> = []
    const outgoing = channel.outgoing as { window?: unknown }
    useUserBuffer(buffer)
    fields[bufferKey] = buffer
    fields[callbackKey] = (length: number, filled: Buffer) => {
      const bytes = filled.subarray(0, length)
      if (channel.writableLength === 0 && typeof outgoing.window === "number" && outgoing.window >= length) {
        channel.write(bytes)
        return true
      }
      // Held by the channel until the client's window adjust, so copied: reading pauses meanwhile, but Node itself
      // resumes a child's unread stdout once the child has exited (child_process' flushStdio).
      const copy = spare.pop() ?? Buffer.allocUnsafe(buffer.length)
      bytes.copy(copy)
      output.pause()
      channel.write(copy.subarray(0, length), () => {
        spare.push(copy)
        output.resume()
      })
      return false
    }
    const done = () => resume(Effect.void)
    output.once("end", done)
    output.once("error", done)
    // What git wrote before (the first output, read to know it answered) waits in the stream's own buffer.
    const early = output.read() as Buffer | null
    if (early !== null && early.length > 0) channel.write(early)
    output.resume()
    return Effect.sync(() => {
      output.off("end", done)
      output.off("error", done)
      output.pause()
    })
  })
}

/**
 * Sends a kept answer of the fetch cache into `channel` through one reused buffer: ssh2 calls a write's callback once
 * all of it is in its packets (at once when the window allows, else after the client's adjusts), and only then is the
 * next piece read into the same buffer. Completes once all of it is handed to the channel.
 */
export const relayKeptAnswer = (kept: KeptAnswer, channel: ssh2.ServerChannel): Effect.Effect<void> =>
  Effect.callback<void>((resume) => {
    // Each read is a round trip through libuv's thread pool: 256 KiB at a time makes 200 of them per 50 MiB clone.
    const buffer = Buffer.allocUnsafe(256 * 1024)
    let position = 0
    let stopped = false
    const step = () => {
      if (stopped) return
      if (position >= kept.bytes) return resume(Effect.void)
      NodeFs.read(kept.fd.fd, buffer, 0, Math.min(buffer.length, kept.bytes - position), position, (error, read) => {
        if (stopped) return
        if (error !== null || read === 0) return resume(Effect.void)
        position += read
        channel.write(buffer.subarray(0, read), step)
      })
    }
    step()
    return Effect.sync(() => {
      stopped = true
    })
  })

/** The most of one protocol v2 request a session holds; a larger one ends the session. */
const requestLimit = 16 * 1024 * 1024

/**
 * What the client sent next in a protocol v2 session: a whole request, the end of the session (its input ended, or a
 * lone flush-pkt, between requests), bytes that are not a whole request (the input ended inside one, or a pkt-line
 * header is malformed: handed to git, whose refusal ends the session) or a request over the limit.
 */
export type SessionRequest =
  | { readonly _tag: "Request"; readonly bytes: Uint8Array }
  | { readonly _tag: "End" }
  | { readonly _tag: "Broken"; readonly bytes: Uint8Array }
  | { readonly _tag: "TooLarge" }

/**
 * Reads a protocol v2 session's requests off the client's input one at a time, as git's serve loop does: a request is
 * its pkt-lines up to the first flush-pkt (a delim-pkt separates its capabilities from its arguments), and a flush-pkt
 * with nothing before it ends the session. At most `limit` bytes are held; reading pauses beyond.
 */
export const sessionRequests = (input: Readable, limit = requestLimit) => {
  // What was read and not yet taken, at the start of a buffer that doubles as it fills.
  let held = Buffer.allocUnsafe(64 * 1024)
  let buffered = 0
  // Where the next pkt-line header starts, and how many pkt-lines of the current request came before it.
  let scanned = 0
  let lines = 0
  let ended = false
  let wake: (() => void) | undefined
  input.on("data", (chunk: Buffer) => {
    if (buffered + chunk.length > held.length) {
      const grown = Buffer.allocUnsafe(Math.max(held.length * 2, buffered + chunk.length))
      held.copy(grown, 0, 0, buffered)
      held = grown
    }
    chunk.copy(held, buffered)
    buffered += chunk.length
    if (buffered > limit) input.pause()
    wake?.()
  })
  const end = () => {
    ended = true
    wake?.()
  }
  input.once("end", end)
  input.once("close", end)
  input.on("error", () => {})

  /** The first `length` bytes, taken off what is held; the next request's scan starts after them. */
  const take = (length: number): Uint8Array => {
    const bytes = Uint8Array.prototype.slice.call(held, 0, length)
    held.copy(held, 0, length, buffered)
    buffered -= length
    if (held.length > 1024 * 1024 && buffered <= 64 * 1024) held = Buffer.from(held.subarray(0, 64 * 1024))
    scanned = 0
    lines = 0
    if (buffered <= limit && input.isPaused()) input.resume()
    return bytes
  }
  const scan = (): SessionRequest | undefined => {
    while (scanned + 4 <= buffered) {
      let length = 0
      for (let index = 0; index < 4; index++) {
        const digit = Number.parseInt(String.fromCharCode(held[scanned + index]!), 16)
        if (Number.isNaN(digit)) return { _tag: "Broken", bytes: take(scanned + 4) }
        length = length * 16 + digit
      }
      if (length === 3) return { _tag: "Broken", bytes: take(scanned + 4) }
      if (length === 0) {
        if (lines === 0) {
          take(scanned + 4)
          return { _tag: "End" }
        }
        return { _tag: "Request", bytes: take(scanned + 4) }
      }
      const size = length < 4 ? 4 : length
      if (scanned + size > limit) return { _tag: "TooLarge" }
      if (scanned + size > buffered) return undefined
      scanned += size
      lines++
    }
    return undefined
  }
  return {
    next: (): Promise<SessionRequest> =>
      new Promise((resolve) => {
        const attempt = () => {
          const found = scan()
          if (found !== undefined) {
            wake = undefined
            return resolve(found)
          }
          if (ended) {
            wake = undefined
            return resolve(buffered === 0 ? { _tag: "End" } : { _tag: "Broken", bytes: take(buffered) })
          }
          wake = attempt
        }
        attempt()
      })
  }
}

/** `git-upload-pack '<path>'` (or `git upload-pack`), the path single-quoted as git quotes it. */
export const parseGitCommand = (
  command: string
): { readonly service: Git.GitService; readonly path: Git.RepoPath } | undefined => {
  const match = /^git[- ](upload-pack|receive-pack) (.+)$/su.exec(command.trim())
  if (match === null) return undefined
  let raw = match[2]!
  if (raw.startsWith("'")) {
    // sq_quote: '...' with ' written as '\'' and ! as '\!'
    const unquoted = /^'((?:[^']|'\\[!']')*)'$/su.exec(raw)
    if (unquoted === null) return undefined
    raw = unquoted[1]!.replace(/'\\([!'])'/gu, "$1")
  }
  const trimmed = raw
    .replace(/^\/+/u, "")
    .replace(/\/+$/u, "")
    .replace(/\.git$/u, "")
  const segments = trimmed.split("/")
  if (segments.length !== 3 || segments.some((segment) => segment === "" || segment === "." || segment === "..")) {
    return undefined
  }
  const [orgSlug, projectName, repoName] = segments as [string, string, string]
  return { service: match[1] as Git.GitService, path: { orgSlug, projectName, repoName } }
}

const refusal = (error: { readonly _tag: string; readonly message: string }) => {
  switch (error._tag) {
    case "NotFound":
    case "Unauthorized":
      return "repository not found"
    case "GitRefused":
      return error.message
    default:
      return error.message
  }
}

/**
 * The SSH transport (decisions.md part 8) on the `ssh2` server: public-key sign-in against registered keys (looked
 * up on every sign-in, so a deleted key stops working at once), only `git-upload-pack` and `git-receive-pack`,
 * authorized by the same rule as smart HTTP, streamed both ways.
 */
export const layer = (options: GitSshServerOptions) =>
  Layer.effect(
    GitSshServer,
    Effect.gen(function* () {
      const context = yield* Effect.context<Git.Repos | Git.SshKeys>()
      const run = Effect.runPromiseWith(context)
      const repos = yield* Git.Repos
      const keys = yield* Git.SshKeys
      const hostKey = yield* hostKeyAt(options.hostKeyPath)

      /**
       * Sends a run's output into the channel: a kept answer or git's pipe through one reused buffer, anything else
       * (an answer from memory) as its stream's chunks. Completes once all of it is handed to the channel.
       */
      const relay = (process: Git.GitProcess, channel: ssh2.ServerChannel) =>
        process.nativeOutput instanceof KeptAnswer
          ? relayKeptAnswer(process.nativeOutput, channel)
          : (relayThroughOneBuffer(process.nativeOutput, channel) ??
            // The reads of git's output that queued up meanwhile go out as one write: ssh2 cuts a write into packets
            // of at most 32 KiB, so pieces of 1 to 64 KiB written one by one would each end in a short packet.
            Stream.runForEachArray(process.output, (chunks) =>
              Effect.callback<void>((resume) => {
                if (channel.write(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks))) resume(Effect.void)
                else channel.once("drain", () => resume(Effect.void))
              })
            ))

      /** One run relayed whole into the channel, then its exit code and, when it failed, what git said. */
      const answer = (
        grant: Git.TransportGrant,
        run: Git.GitRun,
        input: Stream.Stream<Uint8Array, unknown>,
        channel: ssh2.ServerChannel
      ) =>
        Effect.gen(function* () {
          const process = yield* repos.serve(grant, run, input)
          yield* relay(process, channel)
          const code = yield* process.exitCode
          return { code, message: code === 0 ? "" : yield* process.messages }
        }).pipe(Effect.scoped)

      /**
       * A protocol v2 upload-pack session as the loop of stateless runs git's own serve loop is (advertisement, then
       * one request after the other: ls-refs, fetch), each answered as the same request over smart HTTP is: the
       * advertisement and ls-refs from memory, a fresh fetch from the fetch cache, anything else by one
       * `upload-pack --stateless-rpc`. The first failed run ends the session with git's code and words.
       */
      const sessionV2 = (channel: ssh2.ServerChannel, grant: Git.TransportGrant, protocol: string) =>
        Effect.gen(function* () {
          const requests = sessionRequests(channel)
          const advertised = yield* answer(
            grant,
            { service: "upload-pack", mode: "advertise", protocol },
            Stream.empty,
            channel
          )
          if (advertised.code !== 0) return advertised
          while (true) {
            const next = yield* Effect.promise(() => requests.next())
            if (next._tag === "End") return { code: 0, message: "" }
            if (next._tag === "TooLarge") {
              return { code: 128, message: `a request over ${requestLimit / 1024 / 1024} MiB is not served` }
            }
            const run: Git.GitRun = { service: "upload-pack", mode: "stateless", protocol, request: next.bytes }
            const answered = yield* answer(grant, run, Stream.make(next.bytes), channel)
            if (answered.code !== 0) return answered
            if (next._tag === "Broken") return { code: 128, message: "protocol error: not a whole request" }
          }
        })

      const session = (channel: ssh2.ServerChannel, command: string, userId: Kernel.UserId, protocol: string | null) =>
        Effect.gen(function* () {
          const parsed = parseGitCommand(command)
          if (parsed === undefined) {
            return {
              code: 128,
              message: "only git-upload-pack and git-receive-pack <org>/<project>/<repo>.git run here"
            }
          }
          const access = parsed.service === "receive-pack" ? "write" : "read"
          const grant = yield* repos.authorizeTransport(userId, parsed.path, access)
          // A client gone mid-transfer never drains the channel: the scope's end then stops git, which would
          // otherwise wait on its unread output for ever.
          const gone = Effect.callback<"gone">((resume) => {
            const onClose = () => resume(Effect.succeed("gone"))
            channel.once("close", onClose)
            return Effect.sync(() => channel.off("close", onClose))
          })
          const served =
            parsed.service === "upload-pack" && protocol !== null && protocol.split(":").includes("version=2")
              ? sessionV2(channel, grant, protocol)
              : answer(
                  grant,
                  { service: parsed.service, mode: "session", protocol },
                  NodeStream.fromReadable<Uint8Array>({ evaluate: () => channel, closeOnDone: false }),
                  channel
                )
          const ended = yield* Effect.raceFirst(served, Effect.as(gone, undefined))
          return ended ?? { code: 128, message: "" }
        }).pipe(Effect.catch((error) => Effect.succeed({ code: 128, message: refusal(error) })))

      const clients = new Set<ssh2.Connection>()
      const onClient = (client: ssh2.Connection, info: ssh2.ClientInfo) => {
        clients.add(client)
        const openSsh = info.header.versions.software.startsWith("OpenSSH_")
        reusePacketBuffers(client)
        client.on("close", () => clients.delete(client))
        let userId: Kernel.UserId | undefined
        client.on("authentication", (ctx) => {
          if (ctx.method !== "publickey") return ctx.reject(["publickey"])
          const presented = ssh2.utils.parseKey(ctx.key.data)
          if (presented instanceof Error || Array.isArray(presented)) return ctx.reject(["publickey"])
          const signature = ctx.signature
          void run(keys.ownerOf(fingerprintOf(ctx.key.data))).then(
            (owner) => {
              if (Option.isNone(owner)) return ctx.reject(["publickey"])
              if (signature !== undefined && presented.verify(ctx.blob!, signature, ctx.hashAlgo) !== true) {
                return ctx.reject(["publickey"])
              }
              userId = owner.value
              ctx.accept()
            },
            () => ctx.reject(["publickey"])
          )
        })
        client.on("ready", () => {
          client.on("session", (accept) => {
            const opened = accept()
            let protocol: string | null = null
            opened.on("env", (accept, _reject, info) => {
              if (info.key === "GIT_PROTOCOL" && /^[A-Za-z0-9=:._-]{1,100}$/u.test(info.val)) protocol = info.val
              accept?.()
            })
            opened.on("exec", (accept, _reject, info) => {
              const channel = accept()
              if (openSsh) limitInFlight(channel, openSshInFlight)
              void run(session(channel, info.command, userId!, protocol)).then(({ code, message }) => {
                if (message !== "") channel.stderr.write(`fatal: ${message.replace(/^fatal: /u, "")}\n`)
                channel.exit(code)
                channel.end()
              })
            })
            opened.on("pty", (_accept, reject) => reject?.())
            opened.on("shell", (_accept, reject) => reject())
          })
        })
        client.on("error", () => {})
      }
      // ssh2 (its protocol, its ciphers' WebAssembly) is loaded at the first connection, which ssh2's server is made
      // for: a server nobody reaches over SSH never loads it.
      let server: ssh2.Server | undefined
      const listener = createServer((socket) => {
        if (server === undefined) {
          if (!cryptoBindingLoaded()) {
            void run(
              Effect.logWarning(
                `git over SSH: ssh2's native crypto binding does not load under Node ${process.version}; SSH ` +
                  "transfers take about 1.5x the CPU (npm ci, or node scripts/ssh2-binding.mjs, rebuilds it)"
              )
            )
          }
          server = new ssh2.Server({ hostKeys: [hostKey] }, onClient)
        }
        server.injectSocket(socket)
      })

      const address = yield* Effect.acquireRelease(
        Effect.callback<AddressInfo>((resume) => {
          listener.once("error", (cause: Error) => resume(Effect.die(cause)))
          listener.listen(options.port, options.host, () => resume(Effect.succeed(listener.address() as AddressInfo)))
        }),
        () =>
          Effect.promise(
            () =>
              new Promise<void>((resolve) => {
                listener.close(() => resolve())
                for (const client of clients) client.end()
              })
          )
      )
      return GitSshServer.of({ host: options.host, port: address.port })
    })
  )

/** `SERVICE_GIT_SSH_LISTEN` (off: no server), the host key in `<data dir>/ssh_host_ecdsa_key`. */
export const layerConfig = Layer.unwrap(
  Effect.gen(function* () {
    const config = yield* Git.GitConfig
    const hostKeyPath = yield* inDataDir("ssh_host_ecdsa_key")
    return config.sshListen === null
      ? Layer.empty
      : Layer.empty.pipe(
          Layer.provide(layer({ host: config.sshListen.host, port: config.sshListen.port, hostKeyPath }))
        )
  })
)
