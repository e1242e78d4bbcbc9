import * as Dgram from "node:dgram"
import * as Net from "node:net"
import { canonicalHost } from "@hostplane/core/kernel/HostName"
import { Context, Effect, Layer, type Scope } from "effect"
import * as Packet from "dns-packet"

/** Record types the fake serves; RDATA is given as dns-packet takes it (`"1.2.3.4"`, `"target.example.net"`). */
export type FakeDnsType = "A" | "AAAA" | "CNAME" | "NS" | "TXT"

/** A TXT record: one string (split into 255-byte chunks on the wire, as long values must be) or the chunks themselves. */
export type FakeTxtRecord = string | ReadonlyArray<string>

/** Response codes a name can be made to answer with instead of its records. */
export type FakeDnsRcode = "SERVFAIL" | "REFUSED" | "NXDOMAIN"

export interface FakeDnsBehavior {
  /** Every UDP answer is empty with the TC bit set, so a client must ask again over TCP. */
  readonly truncate?: boolean
  /** No answer at all, over UDP or TCP: for timeouts. */
  readonly silent?: boolean
  /** The next `dropNext` UDP queries get no answer; later ones do. */
  readonly dropNext?: number
  /** Every UDP answer is preceded by a forged one with another query id that claims NXDOMAIN. */
  readonly forgeIds?: boolean
}

/** One query as the server received it. */
export interface FakeDnsQuery {
  readonly transport: "udp" | "tcp"
  readonly id: number
  readonly name: string
  readonly type: string
  readonly recursionDesired: boolean
}

type Stored =
  | { readonly type: "TXT"; readonly data: ReadonlyArray<Buffer> }
  | { readonly type: Exclude<FakeDnsType, "TXT">; readonly data: string }

const rcodes: Record<FakeDnsRcode, number> = { SERVFAIL: 2, NXDOMAIN: 3, REFUSED: 5 }

const keyOf = (name: string, type: string): string => `${canonicalHost(name)} ${type}`

const chunks = (record: FakeTxtRecord): ReadonlyArray<Buffer> => {
  if (typeof record !== "string") return record.map((chunk) => Buffer.from(chunk))
  const bytes = Buffer.from(record)
  const out: Array<Buffer> = []
  for (let offset = 0; offset < bytes.length; offset += 255) out.push(bytes.subarray(offset, offset + 255))
  return out.length === 0 ? [Buffer.alloc(0)] : out
}

const decode = (data: Buffer): Packet.DecodedPacket | null => {
  try {
    return Packet.decode(data)
  } catch {
    return null
  }
}

const framed = (message: Buffer): Buffer => {
  const length = Buffer.alloc(2)
  length.writeUInt16BE(message.length)
  return Buffer.concat([length, message])
}

const bindUdp = Effect.callback<Dgram.Socket>((resume) => {
  const socket = Dgram.createSocket("udp4")
  socket.once("error", (cause) => resume(Effect.die(cause)))
  socket.bind(0, "127.0.0.1", () => {
    resume(Effect.succeed(socket))
  })
})

const listenTcp = (server: Net.Server, port: number) =>
  Effect.callback<boolean>((resume) => {
    const failed = () => resume(Effect.succeed(false))
    server.once("error", failed)
    server.listen(port, "127.0.0.1", () => {
      server.off("error", failed)
      resume(Effect.succeed(true))
    })
  })

const closeUdp = (socket: Dgram.Socket) =>
  Effect.callback<void>((resume) => {
    socket.close(() => resume(Effect.void))
  })

/** A small authoritative DNS server on 127.0.0.1, UDP and TCP on one ephemeral port, answering from records a test sets. */
export class FakeDnsServer extends Context.Service<
  FakeDnsServer,
  {
    readonly host: string
    readonly port: number
    /** `127.0.0.1:<port>`, the form resolver settings take. */
    readonly address: string
    /** Replaces the records of one name and type; an empty list removes them. */
    readonly set: {
      (name: string, type: "TXT", records: ReadonlyArray<FakeTxtRecord>): Effect.Effect<void>
      (name: string, type: Exclude<FakeDnsType, "TXT">, records: ReadonlyArray<string>): Effect.Effect<void>
    }
    /** Makes every query for `name` answer with `rcode` instead of records. */
    readonly setRcode: (name: string, rcode: FakeDnsRcode) => Effect.Effect<void>
    /** Changes how the server misbehaves; fields left out keep their value. */
    readonly configure: (behavior: FakeDnsBehavior) => Effect.Effect<void>
    /** Every query received so far, oldest first. */
    readonly queries: Effect.Effect<ReadonlyArray<FakeDnsQuery>>
    /** Forgets records, response codes, behavior and the query log. */
    readonly clear: Effect.Effect<void>
  }
>()("@hostplane/testkit/dns/FakeDnsServer") {
  /** Starts the server; it stops, dropping open TCP connections, when the scope closes. */
  static readonly make = (
    behavior: FakeDnsBehavior = {}
  ): Effect.Effect<FakeDnsServer["Service"], never, Scope.Scope> =>
    Effect.gen(function* () {
      const records = new Map<string, ReadonlyArray<Stored>>()
      const forced = new Map<string, number>()
      const log: Array<FakeDnsQuery> = []
      let current: Required<FakeDnsBehavior> = { truncate: false, silent: false, dropNext: 0, forgeIds: false }
      const configure = (next: FakeDnsBehavior) => {
        current = { ...current, ...next }
      }
      configure(behavior)

      /** A name exists when it or a name below it has records (RFC 8020): otherwise NXDOMAIN. */
      const exists = (name: string): boolean =>
        [...[...records.keys()].map((key) => key.slice(0, key.indexOf(" "))), ...forced.keys()].some(
          (owner) => owner === name || owner.endsWith(`.${name}`)
        )

      const toAnswer = (owner: string, record: Stored): Packet.Answer =>
        record.type === "TXT"
          ? { type: "TXT", name: owner, ttl: 60, class: "IN", data: [...record.data] }
          : { type: record.type, name: owner, ttl: 60, class: "IN", data: record.data }

      const respond = (query: Packet.DecodedPacket, transport: "udp" | "tcp"): Buffer => {
        const question = query.questions?.[0]
        const header = { type: "response" as const, id: query.id ?? 0, questions: query.questions ?? [] }
        const flags = Packet.AUTHORITATIVE_ANSWER | ((query.flags ?? 0) & Packet.RECURSION_DESIRED)
        if (question === undefined) return Packet.encode({ ...header, flags: flags | 1 })
        let owner = canonicalHost(question.name)
        const answers: Array<Packet.Answer> = []
        let rcode = 0
        for (let hop = 0; hop < 8; hop++) {
          const override = forced.get(owner)
          if (override !== undefined) {
            rcode = override
            break
          }
          const direct = records.get(keyOf(owner, question.type))
          if (direct !== undefined) {
            answers.push(...direct.map((record) => toAnswer(owner, record)))
            break
          }
          const alias = question.type === "CNAME" ? undefined : records.get(keyOf(owner, "CNAME"))?.[0]
          if (alias === undefined || alias.type === "TXT") {
            if (!exists(owner)) rcode = 3
            break
          }
          answers.push(toAnswer(owner, alias))
          owner = canonicalHost(alias.data)
        }
        const full = Packet.encode({ ...header, flags: flags | rcode, answers })
        if (transport === "tcp") return full
        const opt = query.additionals?.find((answer) => answer.type === "OPT")
        const limit = opt !== undefined && opt.type === "OPT" ? Math.max(512, opt.udpPayloadSize) : 512
        return current.truncate || full.length > limit
          ? Packet.encode({ ...header, flags: flags | rcode | Packet.TRUNCATED_RESPONSE })
          : full
      }

      const received = (data: Buffer, transport: "udp" | "tcp"): Packet.DecodedPacket | null => {
        const query = decode(data)
        if (query === null || query.flag_qr) return null
        const question = query.questions?.[0]
        log.push({
          transport,
          id: query.id ?? 0,
          name: question === undefined ? "" : question.name,
          type: question === undefined ? "" : question.type,
          recursionDesired: query.flag_rd
        })
        return query
      }

      const tcpSockets = new Set<Net.Socket>()
      const tcp = Net.createServer((socket) => {
        tcpSockets.add(socket)
        socket.on("close", () => tcpSockets.delete(socket))
        socket.on("error", () => socket.destroy())
        let buffered = Buffer.alloc(0)
        socket.on("data", (data) => {
          buffered = Buffer.concat([buffered, data])
          while (buffered.length >= 2 && buffered.length >= 2 + buffered.readUInt16BE(0)) {
            const message = buffered.subarray(2, 2 + buffered.readUInt16BE(0))
            buffered = buffered.subarray(2 + message.length)
            const query = received(message, "tcp")
            if (query !== null && !current.silent) socket.write(framed(respond(query, "tcp")))
          }
        })
      })

      const { udp, port } = yield* Effect.acquireRelease(
        Effect.gen(function* () {
          for (let attempt = 0; ; attempt++) {
            const udp = yield* bindUdp
            const port = udp.address().port
            if (yield* listenTcp(tcp, port)) return { udp, port }
            yield* closeUdp(udp)
            if (attempt >= 20) return yield* Effect.die(new Error("FakeDnsServer: no port free for both UDP and TCP"))
          }
        }),
        ({ udp }) =>
          Effect.callback<void>((resume) => {
            for (const socket of tcpSockets) socket.destroy()
            tcp.close(() => udp.close(() => resume(Effect.void)))
          })
      )

      udp.on("message", (data, remote) => {
        const query = received(data, "udp")
        if (query === null || current.silent) return
        if (current.dropNext > 0) {
          current = { ...current, dropNext: current.dropNext - 1 }
          return
        }
        if (current.forgeIds) {
          const forged = Packet.encode({
            type: "response",
            id: ((query.id ?? 0) + 1) & 0xffff,
            flags: Packet.AUTHORITATIVE_ANSWER | rcodes.NXDOMAIN,
            questions: query.questions ?? []
          })
          udp.send(forged, remote.port, remote.address)
        }
        udp.send(respond(query, "udp"), remote.port, remote.address)
      })

      const set = (name: string, type: FakeDnsType, list: ReadonlyArray<FakeTxtRecord>) =>
        Effect.sync(() => {
          const key = keyOf(name, type)
          if (list.length === 0) {
            records.delete(key)
            return
          }
          records.set(
            key,
            list.map((record): Stored =>
              type === "TXT"
                ? { type, data: chunks(record) }
                : { type, data: typeof record === "string" ? record : record.join("") }
            )
          )
        })

      return FakeDnsServer.of({
        host: "127.0.0.1",
        port,
        address: `127.0.0.1:${port}`,
        set,
        setRcode: (name, rcode) => Effect.sync(() => void forced.set(canonicalHost(name), rcodes[rcode])),
        configure: (next) => Effect.sync(() => configure(next)),
        queries: Effect.sync(() => [...log]),
        clear: Effect.sync(() => {
          records.clear()
          forced.clear()
          log.length = 0
          current = { truncate: false, silent: false, dropNext: 0, forgeIds: false }
        })
      })
    })

  static readonly layer = (behavior: FakeDnsBehavior = {}): Layer.Layer<FakeDnsServer> =>
    Layer.effect(FakeDnsServer, FakeDnsServer.make(behavior))
}
