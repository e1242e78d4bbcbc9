import { DnsConfig } from "@hostplane/core/dns/DnsConfig"
import { zoneKeyContext } from "@hostplane/core/dns/Zones"
import type { ZoneContents } from "@hostplane/core/dns/Zone"
import { ZoneStore } from "@hostplane/core/dns/ZoneStore"
import { HostnamesConfig } from "@hostplane/core/hostnames/HostnamesConfig"
import { Sealer } from "@hostplane/core/secrets/Sealer"
import { Clock, Context, Effect, Layer, Metric, Option, Schedule, type Scope } from "effect"
import * as Dgram from "node:dgram"
import * as Net from "node:net"
import { type Answer, answerFrom, rcodes } from "./Answer.ts"
import { privateKeyOf } from "./Dnssec.ts"
import { type OpenedKey, ServedZone, signatureLife } from "./ServedZone.ts"
import { header, optWire, typeCodes } from "./Wire.ts"

/** Where the name server listens; port 0 picks one free port for both UDP and TCP. */
export interface Listen {
  readonly host: string
  readonly port: number
}

/** Our EDNS0 UDP payload size (DNS flag day 2020). */
export const ednsPayload = 1232

const flagQr = 0x8000
const flagAa = 0x0400
const flagTc = 0x0200
const flagRd = 0x0100
const opcodeQuery = 0
const opcodeNotify = 4
const rcodeNotAuth = 9

const queries = Metric.counter("hostplane_dns_queries_total", {
  description: "DNS queries answered over UDP and TCP (zone transfers aside), by the answer's rcode",
  incremental: true
})
const rcodeNames: Record<number, string> = {
  0: "NOERROR",
  1: "FORMERR",
  2: "SERVFAIL",
  3: "NXDOMAIN",
  4: "NOTIMP",
  5: "REFUSED",
  9: "NOTAUTH"
}
const queriesBy = new Map<number, Metric.Metric<number, unknown>>()
const noServices = Context.empty()

/** Counts an answer by its header's rcode (BADVERS, an extended rcode, shows as its low bits: NOERROR). */
const counted = (message: Buffer): Buffer => {
  const rcode = message.readUInt16BE(2) & 0xf
  let metric = queriesBy.get(rcode)
  if (metric === undefined) {
    metric = Metric.withAttributes(queries, { rcode: rcodeNames[rcode] ?? String(rcode) })
    queriesBy.set(rcode, metric)
  }
  metric.updateUnsafe(1, noServices)
  return message
}
const maxTransferMessage = 16 * 1024
/** The longest DNS message: its length travels in two bytes over TCP (RFC 1035 4.2.2). */
const maxMessage = 65535

/** One parsed query: the parts of RFC 1035 4.1 the server reads, with the question as received. */
interface Query {
  readonly id: number
  readonly opcode: number
  readonly recursionDesired: boolean
  readonly response: boolean
  /** The name as asked (case kept), without the trailing dot. */
  readonly name: string
  readonly type: number
  readonly klass: number
  /** The question section's bytes, echoed in the response. */
  readonly question: Buffer
  readonly edns: { readonly payload: number; readonly version: number; readonly dnssecOk: boolean } | undefined
}

/** Parses a query by hand: one question, an optional OPT record; anything else is undefined (FORMERR). */
const parseQuery = (message: Buffer): Query | "formerr" | undefined => {
  if (message.length < 12) return undefined
  const id = message.readUInt16BE(0)
  const flags = message.readUInt16BE(2)
  const qdcount = message.readUInt16BE(4)
  const arcount = message.readUInt16BE(10)
  // A response (a NOTIFY acknowledgement) is never answered, whatever it holds.
  const response = (flags & flagQr) !== 0
  if (!response && (qdcount !== 1 || message.readUInt16BE(6) !== 0)) return "formerr"
  let offset = 12
  const labels: Array<string> = []
  for (;;) {
    const length = message[offset]
    if (length === undefined || length > 63) return "formerr"
    offset++
    if (length === 0) break
    if (offset + length > message.length) return "formerr"
    labels.push(message.toString("latin1", offset, offset + length))
    offset += length
  }
  if (offset + 4 > message.length) return "formerr"
  const type = message.readUInt16BE(offset)
  const klass = message.readUInt16BE(offset + 2)
  offset += 4
  const question = message.subarray(12, offset)
  let edns: Query["edns"]
  // Skip authority records (none expected) and find an OPT among the additionals.
  let records = message.readUInt16BE(8) + arcount
  while (records-- > 0 && offset < message.length) {
    while (offset < message.length && message[offset] !== 0 && (message[offset]! & 0xc0) === 0) {
      offset += message[offset]! + 1
    }
    offset += offset < message.length && (message[offset]! & 0xc0) === 0xc0 ? 2 : 1
    if (offset + 10 > message.length) return "formerr"
    const rrType = message.readUInt16BE(offset)
    const rdlength = message.readUInt16BE(offset + 8)
    if (rrType === typeCodes.OPT) {
      edns = {
        payload: Math.max(512, message.readUInt16BE(offset + 2)),
        version: message[offset + 5]!,
        dnssecOk: (message.readUInt16BE(offset + 6) & 0x8000) !== 0
      }
    }
    offset += 10 + rdlength
  }
  return {
    id,
    opcode: (flags >> 11) & 0xf,
    recursionDesired: (flags & flagRd) !== 0,
    response,
    name: labels.join("."),
    type,
    klass,
    question,
    edns
  }
}

const counts = (qd: number, an: number, ns: number, ar: number) => ({ qd, an, ns, ar })

/** A response without records: errors, REFUSED, truncation. */
const bare = (query: Query, rcode: number, extraFlags = 0): Buffer => {
  const opt = query.edns === undefined ? [] : [optWire(ednsPayload, query.edns.dnssecOk, rcode >> 4)]
  const flags = flagQr | (query.opcode << 11) | (query.recursionDesired ? flagRd : 0) | extraFlags | (rcode & 0xf)
  return Buffer.concat([header(query.id, flags, counts(1, 0, 0, opt.length)), query.question, ...opt])
}

const encodeAnswer = (query: Query, result: Answer): Buffer => {
  const opt = query.edns === undefined ? [] : [optWire(ednsPayload, query.edns.dnssecOk)]
  const flags =
    flagQr | (query.recursionDesired ? flagRd : 0) | (result.authoritative ? flagAa : 0) | (result.rcode & 0xf)
  return Buffer.concat([
    header(
      query.id,
      flags,
      counts(1, result.answer.length, result.authority.length, result.additional.length + opt.length)
    ),
    query.question,
    ...result.answer,
    ...result.authority,
    ...result.additional,
    ...opt
  ])
}

const framed = (message: Buffer): Buffer => {
  const length = Buffer.alloc(2)
  length.writeUInt16BE(message.length)
  return Buffer.concat([length, message])
}

/** `::ffff:1.2.3.4` as `1.2.3.4`, so an IPv4 allow list matches IPv4 clients of a dual-stack socket. */
const plainAddress = (address: string): string => address.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/, "$1")

/** `ip[:port]` or `[ipv6]:port` of a NOTIFY target, port 53 by default. */
export const parseTarget = (value: string): Option.Option<Listen> => {
  const text = value.trim()
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(text)
  if (bracketed !== null) return Option.some({ host: bracketed[1]!, port: Number(bracketed[2] ?? 53) })
  if (Net.isIP(text) !== 0) return Option.some({ host: text, port: 53 })
  const match = /^([^:]+):(\d{1,5})$/.exec(text)
  return match !== null && Net.isIPv4(match[1]!)
    ? Option.some({ host: match[1]!, port: Number(match[2]) })
    : Option.none()
}

const bindUdp = (host: string, port: number) =>
  Effect.callback<Dgram.Socket | undefined>((resume) => {
    const socket = Dgram.createSocket(Net.isIPv6(host) ? "udp6" : "udp4")
    socket.once("error", () => {
      socket.close()
      resume(Effect.succeed(undefined))
    })
    socket.bind(port, host, () => resume(Effect.succeed(socket)))
  })

const listenTcp = (server: Net.Server, host: string, port: number) =>
  Effect.callback<boolean>((resume) => {
    const failed = () => resume(Effect.succeed(false))
    server.once("error", failed)
    server.listen(port, host, () => {
      server.off("error", failed)
      resume(Effect.succeed(true))
    })
  })

/**
 * The authoritative name server of decisions.md part 8: UDP and TCP on one address, answering every zone of the
 * `ZoneStore` from memory. The copy is loaded at start and kept current through the store's change feed (PostgreSQL
 * `LISTEN`, or the memory store's signal), so no DNS query reads the database; several replicas each keep their own.
 */
export class NameServer extends Context.Service<
  NameServer,
  {
    readonly host: string
    readonly port: number
    /** The serial this server now serves for `zone`, none when it serves no such zone. */
    readonly servedSerial: (zone: string) => Option.Option<number>
  }
>()("@hostplane/adapters-providers/dns/NameServer") {
  /** Starts the server on `listen`; it stops when the scope closes. */
  static readonly make = (listen: Listen) =>
    Effect.gen(function* () {
      const store = yield* ZoneStore
      const sealer = yield* Sealer
      const config = yield* DnsConfig
      const nameservers = (yield* HostnamesConfig).dnsNameservers
      const allowed = new Set(config.transferAllow.map((address) => plainAddress(address.trim())))
      const notifyTargets = config.notify.flatMap((target) => Option.toArray(parseTarget(target)))

      const zones = new Map<string, ServedZone>()
      const cache = new Map<string, Buffer>()

      const zoneOf = (name: string): ServedZone | undefined => {
        for (let at = name; ;) {
          const zone = zones.get(at)
          if (zone !== undefined) return zone
          const dot = at.indexOf(".")
          if (dot < 0) return undefined
          at = at.slice(dot + 1)
        }
      }

      /** The full answer to a query (no truncation); cached until the next zone change. */
      const respond = (query: Query): Buffer => {
        if (query.opcode !== opcodeQuery) return bare(query, rcodes.NOTIMP)
        if (query.edns !== undefined && query.edns.version !== 0) return bare(query, 16)
        const name = query.name.toLowerCase()
        const zone = query.klass === 1 || query.klass === 255 ? zoneOf(name) : undefined
        if (zone === undefined) return bare(query, rcodes.REFUSED)
        const dnssec = zone.signed && query.edns?.dnssecOk === true
        const key = `${query.type}/${dnssec ? 1 : 0}/${query.edns === undefined ? 0 : 1}/${query.name}`
        const cached = cache.get(key)
        if (cached !== undefined) {
          const copy = Buffer.from(cached)
          copy.writeUInt16BE(query.id, 0)
          copy.writeUInt16BE((copy.readUInt16BE(2) & ~flagRd) | (query.recursionDesired ? flagRd : 0), 2)
          return copy
        }
        const message = encodeAnswer(query, answerFrom(zone, name, query.type, dnssec))
        if (cache.size > 50_000) cache.clear()
        cache.set(key, message)
        return message
      }

      /**
       * `respond` made safe for a socket: an answer that cannot be built, or is longer than one DNS message can be
       * (65535 bytes, a limit the API keeps every rrset well under), is SERVFAIL instead of an exception.
       */
      const answerOrFail = (query: Query): Buffer => {
        try {
          const message = respond(query)
          return message.length <= maxMessage ? message : bare(query, rcodes.SERVFAIL)
        } catch {
          return bare(query, rcodes.SERVFAIL)
        }
      }

      const udpAnswer = (query: Query): Buffer => {
        if (query.type === typeCodes.AXFR) return bare(query, rcodes.REFUSED)
        const message = answerOrFail(query)
        const limit = query.edns === undefined ? 512 : Math.min(query.edns.payload, 4096)
        return message.length <= limit ? message : bare(query, message.readUInt16BE(2) & 0xf, flagTc | flagAa)
      }

      const transfer = (query: Query, remote: string, send: (message: Buffer) => void) => {
        const zone = zones.get(query.name.toLowerCase())
        if (zone === undefined)
          return send(bare(query, zoneOf(query.name.toLowerCase()) ? rcodeNotAuth : rcodes.REFUSED))
        if (!allowed.has(plainAddress(remote))) return send(bare(query, rcodes.REFUSED))
        const records = zone.transfer()
        let batch: Array<Buffer> = []
        let size = 0
        let first = true
        const flush = () => {
          const parts = first ? [query.question] : []
          send(
            Buffer.concat([
              header(query.id, flagQr | flagAa, counts(first ? 1 : 0, batch.length, 0, 0)),
              ...parts,
              ...batch
            ])
          )
          first = false
          batch = []
          size = 0
        }
        for (const record of records) {
          if (size + record.length > maxTransferMessage && batch.length > 0) flush()
          batch.push(record)
          size += record.length
        }
        flush()
      }

      // NOTIFY (RFC 1996) to the configured secondaries after each change, from the server's own UDP socket,
      // repeated every two seconds until acknowledged, at most five times.
      const pendingNotify = new Map<number, ReturnType<typeof setTimeout>>()
      let udp: Dgram.Socket | undefined
      const sendNotify = (zone: ServedZone) => {
        for (const target of notifyTargets) {
          let id = Math.floor(Math.random() * 0x10000)
          while (pendingNotify.has(id)) id = (id + 1) & 0xffff
          const soa = zone.soa.wire[0]!
          const question = Buffer.concat([
            soa.subarray(0, soa.length - 10 - zone.soa.rdatas[0]!.length),
            Buffer.from([0, 6, 0, 1])
          ])
          const message = Buffer.concat([header(id, (opcodeNotify << 11) | flagAa, counts(1, 1, 0, 0)), question, soa])
          let attempts = 0
          const attempt = () => {
            if (udp === undefined || attempts++ >= 5) return void pendingNotify.delete(id)
            udp.send(message, target.port, target.host)
            const timer = setTimeout(attempt, 2000)
            timer.unref()
            pendingNotify.set(id, timer)
          }
          attempt()
        }
      }
      const acknowledged = (query: Query) => {
        const timer = pendingNotify.get(query.id)
        if (timer !== undefined) clearTimeout(timer)
        pendingNotify.delete(query.id)
      }

      const build = Effect.fnUntraced(function* (contents: ZoneContents) {
        let key: OpenedKey | undefined
        const row = contents.zone
        if (row.key !== null && row.dnssec !== "off") {
          const pkcs8 = yield* Effect.orDie(sealer.open(row.key.sealed, zoneKeyContext(row.name)))
          key = { privateKey: privateKeyOf(pkcs8), publicKey: Buffer.from(row.key.publicKey, "base64") }
        }
        const now = Math.floor((yield* Clock.currentTimeMillis) / 1000)
        return new ServedZone(contents, nameservers, key, now)
      })

      const install = (name: string, served: ServedZone | undefined) => {
        const before = zones.get(name)
        if (served === undefined) zones.delete(name)
        else zones.set(name, served)
        cache.clear()
        if (served !== undefined && before?.serial !== served.serial) sendNotify(served)
      }

      const reload = (name: string) =>
        Effect.flatMap(store.contents(name), (contents) =>
          Option.isNone(contents)
            ? Effect.sync(() => install(name, undefined))
            : Effect.map(build(contents.value), (served) => install(name, served))
        )

      const reloadAll = Effect.gen(function* () {
        const all = yield* store.all
        const names = new Set(all.map((contents) => contents.zone.name))
        for (const name of [...zones.keys()]) if (!names.has(name)) install(name, undefined)
        for (const contents of all) {
          const served = yield* build(contents)
          const before = zones.get(served.name)
          zones.set(served.name, served)
          if (before !== undefined && before.serial !== served.serial) sendNotify(served)
        }
        cache.clear()
      })

      // Subscribe, then load everything, then apply each change; a lost feed starts over.
      const follow = Effect.scoped(
        Effect.gen(function* () {
          const feed = yield* store.watch
          yield* reloadAll
          for (;;) {
            const names = yield* feed.next
            for (const name of new Set(names)) yield* reload(name)
          }
        })
      ).pipe(
        Effect.tapError((error) => Effect.logWarning(`DNS zone feed lost (${error.message}); reloading every zone`)),
        Effect.retry(Schedule.spaced("1 second"))
      )

      // Signatures are made again well before they expire: every zone is rebuilt daily.
      const refresh = Effect.sleep(`${Math.floor(signatureLife / 14)} seconds`).pipe(
        Effect.andThen(reloadAll),
        Effect.forever
      )

      const tcpSockets = new Set<Net.Socket>()
      const tcp = Net.createServer((socket) => {
        tcpSockets.add(socket)
        socket.setTimeout(30_000, () => socket.destroy())
        socket.on("close", () => tcpSockets.delete(socket))
        socket.on("error", () => socket.destroy())
        let buffered = Buffer.alloc(0)
        socket.on("data", (data) => {
          buffered = buffered.length === 0 ? data : Buffer.concat([buffered, data])
          while (buffered.length >= 2 && buffered.length >= 2 + buffered.readUInt16BE(0)) {
            const message = buffered.subarray(2, 2 + buffered.readUInt16BE(0))
            buffered = buffered.subarray(2 + message.length)
            const query = parseQuery(message)
            if (query === undefined) return void socket.destroy()
            if (query === "formerr") {
              const reply = Buffer.from(message.subarray(0, 12))
              reply.writeUInt16BE(flagQr | rcodes.FORMERR, 2)
              reply.fill(0, 4)
              socket.write(framed(counted(reply)))
              continue
            }
            if (query.response) continue
            if (query.type === typeCodes.AXFR || query.type === typeCodes.IXFR) {
              try {
                transfer(query, socket.remoteAddress ?? "", (reply) => socket.write(framed(reply)))
              } catch {
                // A transfer that cannot be framed ends the connection; the secondary retries or reports it.
                return void socket.destroy()
              }
            } else socket.write(framed(counted(answerOrFail(query))))
          }
        })
      })

      const bound = yield* Effect.acquireRelease(
        Effect.gen(function* () {
          for (let attempt = 0; ; attempt++) {
            const socket = yield* bindUdp(listen.host, listen.port)
            if (socket !== undefined) {
              const port = socket.address().port
              if (yield* listenTcp(tcp, listen.host, port)) return { socket, port }
              socket.close()
            }
            if (listen.port !== 0 || attempt >= 20) {
              return yield* Effect.die(new Error(`DNS: cannot listen on ${listen.host}:${listen.port} (UDP and TCP)`))
            }
          }
        }),
        ({ socket }) =>
          Effect.callback<void>((resume) => {
            for (const timer of pendingNotify.values()) clearTimeout(timer)
            for (const open of tcpSockets) open.destroy()
            tcp.close(() => socket.close(() => resume(Effect.void)))
          })
      )
      udp = bound.socket
      bound.socket.on("message", (message, remote) => {
        const query = parseQuery(message)
        if (query === undefined) return
        if (query === "formerr") {
          const reply = Buffer.from(message.subarray(0, 12))
          reply.writeUInt16BE(flagQr | rcodes.FORMERR, 2)
          reply.fill(0, 4)
          return void bound.socket.send(counted(reply), remote.port, remote.address)
        }
        if (query.response) {
          if (query.opcode === opcodeNotify) acknowledged(query)
          return
        }
        bound.socket.send(counted(udpAnswer(query)), remote.port, remote.address)
      })

      // The first load happens before the server is announced, so it answers every zone from its first query.
      yield* reloadAll
      yield* Effect.forkScoped(follow)
      yield* Effect.forkScoped(refresh)

      return NameServer.of({
        host: listen.host,
        port: bound.port,
        servedSerial: (zone) => Option.map(Option.fromNullishOr(zones.get(zone)), (served) => served.serial)
      })
    })

  /** The server on `listen` as a layer. */
  static readonly layer = (listen: Listen) => Layer.effect(NameServer, NameServer.make(listen))
}

export type NameServerNeeds = ZoneStore | Sealer | DnsConfig | HostnamesConfig | Scope.Scope
