import { randomInt } from "node:crypto"
import * as Dgram from "node:dgram"
import * as Dns from "node:dns"
import * as Net from "node:net"
import * as Hostnames from "@hostplane/core/hostnames/index"
import { canonicalHost } from "@hostplane/core/kernel/HostName"
import { Config, ConfigProvider, Duration, Effect, Layer, Option } from "effect"
import * as Packet from "dns-packet"

/** One recursive resolver to ask. */
export interface Server {
  readonly host: string
  readonly port: number
  readonly family: 4 | 6
}

export interface Options {
  /** `ip`, `ip:port` or `[ipv6]:port`; asked in turn, one per attempt. */
  readonly servers: ReadonlyArray<string>
  /** Longest wait for one answer, over UDP and again over TCP after truncation; default 2 seconds. */
  readonly timeout?: Duration.Input | undefined
  /** Attempts per lookup, the first included; default 2 (one retry, on the next server when there are several). */
  readonly attempts?: number | undefined
}

export const defaultTimeout = Duration.seconds(2)
export const defaultAttempts = 2

type QueryType = "TXT" | "CNAME"
type Reason = Hostnames.DnsLookupReason

const rcodeNames: Record<number, string> = { 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED" }

/** EDNS0 with the 1232-byte payload of DNS flag day 2020, so large TXT sets rarely need TCP. */
const edns: Packet.OptAnswer = {
  type: "OPT",
  name: ".",
  udpPayloadSize: 1232,
  extendedRcode: 0,
  ednsVersion: 0,
  flags: 0,
  flag_do: false,
  options: []
}

const invalidServer = (value: string) =>
  new Config.ConfigError(
    new ConfigProvider.SourceError({
      message: `SERVICE_DNS_RESOLVERS: ${JSON.stringify(value)} is not an IP address with an optional port (1.1.1.1, 1.1.1.1:53, [2606:4700::1111]:53)`
    })
  )

const portOf = (text: string | undefined): number | null => {
  if (text === undefined) return 53
  const port = /^\d{1,5}$/.test(text) ? Number(text) : 0
  return port >= 1 && port <= 65535 ? port : null
}

/** IPv6 in the compressed lowercase form Node reports for the sender of a datagram. */
const canonicalV6 = (address: string): string => new URL(`http://[${address}]`).hostname.slice(1, -1)

/** Reads `ip`, `ip:port`, `[ipv6]` or `[ipv6]:port`; a bare IPv6 address takes port 53. */
export const parseServer = (value: string): Option.Option<Server> => {
  const text = value.trim()
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text)
  if (bracketed !== null) {
    const port = portOf(bracketed[2])
    const host = bracketed[1] ?? ""
    return Net.isIPv6(host) && port !== null ? Option.some({ host: canonicalV6(host), port, family: 6 }) : Option.none()
  }
  if (Net.isIPv4(text)) return Option.some({ host: text, port: 53, family: 4 })
  if (Net.isIPv6(text)) return Option.some({ host: canonicalV6(text), port: 53, family: 6 })
  const colon = text.lastIndexOf(":")
  const host = text.slice(0, colon)
  const port = portOf(text.slice(colon + 1))
  return colon > 0 && Net.isIPv4(host) && port !== null ? Option.some({ host, port, family: 4 }) : Option.none()
}

const display = (server: Server): string =>
  server.family === 6 ? `[${server.host}]:${server.port}` : `${server.host}:${server.port}`

const sameName = (a: string, b: string): boolean => canonicalHost(a) === canonicalHost(b)

const decode = (data: Buffer): Packet.DecodedPacket | null => {
  try {
    return Packet.decode(data)
  } catch {
    return null
  }
}

const txtString = (data: Packet.TxtData): string =>
  (Array.isArray(data) ? data : [data])
    .map((chunk) => (typeof chunk === "string" ? chunk : chunk.toString("utf8")))
    .join("")

/** Picks one resolver's answer to one query apart from everything else that may arrive on the socket. */
const isAnswerTo = (packet: Packet.DecodedPacket, id: number, name: string, type: QueryType): boolean => {
  if (packet.id !== id || !packet.flag_qr) return false
  const question = packet.questions?.[0]
  return question === undefined || (sameName(question.name, name) && question.type === type)
}

const encodeQuery = (id: number, name: string, type: QueryType): Buffer =>
  Packet.encode({
    type: "query",
    id,
    flags: Packet.RECURSION_DESIRED,
    questions: [{ type, name, class: "IN" }],
    additionals: [edns]
  })

/** The stub resolver over UDP with TCP on truncation (RFC 1035 4.2, RFC 7766). */
export const make = Effect.fnUntraced(function* (options: Options) {
  const servers: Array<Server> = []
  for (const value of options.servers) {
    const server = parseServer(value)
    if (Option.isNone(server)) return yield* Effect.fail(invalidServer(value))
    servers.push(server.value)
  }
  if (servers.length === 0) {
    return yield* Effect.fail(
      new Config.ConfigError(
        new ConfigProvider.SourceError({ message: "SERVICE_DNS_RESOLVERS: no DNS resolver to ask" })
      )
    )
  }
  const timeout = Duration.fromInputUnsafe(options.timeout ?? defaultTimeout)
  const attempts = Math.max(1, Math.floor(options.attempts ?? defaultAttempts))

  const error = (reason: Reason, name: string, type: QueryType, message: string) =>
    new Hostnames.DnsLookupError({ reason, name, type, message: `${type} ${name}: ${message}` })

  const timeLimit = (name: string, type: QueryType, server: Server, transport: string) =>
    Effect.timeoutOrElse({
      duration: timeout,
      orElse: () =>
        Effect.fail(
          error(
            "timeout",
            name,
            type,
            `no answer from ${display(server)} over ${transport} in ${Duration.format(timeout)}`
          )
        )
    })

  const overUdp = (server: Server, name: string, type: QueryType) =>
    Effect.callback<Packet.DecodedPacket, Hostnames.DnsLookupError>((resume) => {
      const id = randomInt(0, 65536)
      const socket = Dgram.createSocket(server.family === 6 ? "udp6" : "udp4")
      let open = true
      const close = () => {
        if (open) {
          open = false
          socket.close()
        }
      }
      const finish = (effect: Effect.Effect<Packet.DecodedPacket, Hostnames.DnsLookupError>) => {
        if (!open) return
        close()
        resume(effect)
      }
      const unreachable = (cause: Error) =>
        finish(Effect.fail(error("network", name, type, `${display(server)} over UDP: ${cause.message}`)))
      socket.on("error", unreachable)
      socket.on("message", (data, remote) => {
        if (remote.port !== server.port || remote.address !== server.host) return
        const packet = decode(data)
        if (packet !== null && isAnswerTo(packet, id, name, type)) finish(Effect.succeed(packet))
      })
      socket.connect(server.port, server.host, () => {
        socket.send(encodeQuery(id, name, type), (cause) => {
          if (cause) unreachable(cause)
        })
      })
      return Effect.sync(close)
    }).pipe(timeLimit(name, type, server, "UDP"))

  const overTcp = (server: Server, name: string, type: QueryType) =>
    Effect.callback<Packet.DecodedPacket, Hostnames.DnsLookupError>((resume) => {
      const id = randomInt(0, 65536)
      const socket = Net.connect({ host: server.host, port: server.port })
      let open = true
      let received = Buffer.alloc(0)
      const finish = (effect: Effect.Effect<Packet.DecodedPacket, Hostnames.DnsLookupError>) => {
        if (!open) return
        open = false
        socket.destroy()
        resume(effect)
      }
      const unreachable = (message: string) =>
        finish(Effect.fail(error("network", name, type, `${display(server)} over TCP: ${message}`)))
      socket.on("connect", () => {
        const query = encodeQuery(id, name, type)
        const length = Buffer.alloc(2)
        length.writeUInt16BE(query.length)
        socket.write(Buffer.concat([length, query]))
      })
      socket.on("data", (data) => {
        received = Buffer.concat([received, data])
        if (received.length < 2) return
        const length = received.readUInt16BE(0)
        if (received.length < 2 + length) return
        const packet = decode(received.subarray(2, 2 + length))
        if (packet !== null && isAnswerTo(packet, id, name, type)) finish(Effect.succeed(packet))
        else unreachable("the answer does not match the query")
      })
      socket.on("error", (cause) => unreachable(cause.message))
      socket.on("close", () => unreachable("connection closed before the answer"))
      return Effect.sync(() => {
        open = false
        socket.destroy()
      })
    }).pipe(timeLimit(name, type, server, "TCP"))

  /** One query to one server: an answer (NOERROR or NXDOMAIN), or why there was none. */
  const ask = Effect.fnUntraced(function* (server: Server, name: string, type: QueryType) {
    const first = yield* overUdp(server, name, type)
    const packet = first.flag_tc ? yield* overTcp(server, name, type) : first
    const rcode = (packet.flags ?? 0) & 0xf
    if (rcode === 0 || rcode === 3) return packet
    const rcodeName = rcodeNames[rcode] ?? `RCODE ${rcode}`
    return yield* Effect.fail(
      error(rcode === 5 ? "refused" : "servfail", name, type, `${display(server)} answered ${rcodeName}`)
    )
  })

  const lookup = Effect.fnUntraced(function* (input: string, type: QueryType) {
    const name = canonicalHost(input)
    const labels = name.split(".")
    if (name === "" || name.length > 253 || labels.some((label) => label === "" || label.length > 63)) {
      return yield* Effect.fail(error("nxdomain", input, type, "not a valid DNS name"))
    }
    let last: Hostnames.DnsLookupError | null = null
    for (let attempt = 0; attempt < attempts; attempt++) {
      const server = servers[attempt % servers.length] as Server
      const result = yield* Effect.result(ask(server, name, type))
      if (result._tag === "Success") {
        const packet = result.success
        if (((packet.flags ?? 0) & 0xf) === 3) {
          return yield* Effect.fail(error("nxdomain", name, type, "no such name (NXDOMAIN)"))
        }
        return { name, answers: packet.answers ?? [] }
      }
      last = result.failure
    }
    return yield* Effect.fail(last ?? error("network", name, type, "no attempt made"))
  })

  const txt = Effect.fn("DnsResolverUdp.txt")(function* (input: string) {
    const { name, answers } = yield* lookup(input, "TXT")
    let owner = name
    for (let hop = 0; hop < 16; hop++) {
      const alias = answers.find((answer) => answer.type === "CNAME" && sameName(answer.name, owner))
      if (alias === undefined || alias.type !== "CNAME") break
      owner = alias.data
    }
    const values = answers.flatMap((answer) =>
      answer.type === "TXT" && sameName(answer.name, owner) ? [txtString(answer.data)] : []
    )
    if (values.length === 0) return yield* Effect.fail(error("nodata", name, "TXT", "no TXT record"))
    return values
  })

  const cname = Effect.fn("DnsResolverUdp.cname")(function* (input: string) {
    const { name, answers } = yield* lookup(input, "CNAME")
    const alias = answers.find((answer) => answer.type === "CNAME" && sameName(answer.name, name))
    return alias === undefined || alias.type !== "CNAME"
      ? Option.none<string>()
      : Option.some(canonicalHost(alias.data))
  })

  return Hostnames.DnsResolver.of({ txt, cname })
})

/** The resolver asking `servers`; a server that is not an IP address fails the layer with a `ConfigError`. */
export const layer = (options: Options): Layer.Layer<Hostnames.DnsResolver, Config.ConfigError> =>
  Layer.effect(Hostnames.DnsResolver, make(options))

/** `SERVICE_DNS_RESOLVERS`: a comma list of `ip` or `ip:port`. */
export const serversConfig: Config.Config<Option.Option<string>> = Config.option(Config.String("SERVICE_DNS_RESOLVERS"))

/** Resolvers from `SERVICE_DNS_RESOLVERS`, else the system's (`node:dns` `getServers()`). */
export const layerConfig: Layer.Layer<Hostnames.DnsResolver, Config.ConfigError> = Layer.unwrap(
  Effect.map(serversConfig, (setting) =>
    layer({
      servers: Option.match(setting, {
        onNone: () => Dns.getServers(),
        onSome: (value) =>
          value
            .split(",")
            .map((item) => item.trim())
            .filter((item) => item !== "")
      })
    })
  )
)
