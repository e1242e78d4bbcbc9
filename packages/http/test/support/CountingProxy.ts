import { Redacted } from "effect"
import * as Net from "node:net"

/** What a server runs beside its requests: the edge's node revision poll and the auth cache's change feed. */
const isBackground = (statement: string) => /\bnode_revision\b|^\s*(UN)?LISTEN\b/iu.test(statement)

/** Counts the statements (simple queries and extended-protocol executions) clients send through it to PostgreSQL. */
export const countingProxy = async (target: URL) => {
  const statements: Array<string> = []
  // The connections open now, each with the statements it sent; `cutting`: those that send a match are closed.
  const open = new Map<() => void, Array<string>>()
  let cutting: RegExp | undefined
  const server = Net.createServer((socket) => {
    const upstream = Net.connect(Number(target.port), target.hostname)
    const sent: Array<string> = []
    const named = new Map<string, string>()
    let bound = ""
    let started = false
    let buffered = Buffer.alloc(0)
    socket.on("data", (chunk) => {
      upstream.write(chunk)
      buffered = Buffer.concat([buffered, chunk])
      for (;;) {
        if (!started) {
          if (buffered.length < 8) return
          const length = buffered.readInt32BE(0)
          if (buffered.length < length) return
          if (buffered.readInt32BE(4) !== 80877103) started = true // not an SSLRequest: the startup message
          buffered = buffered.subarray(length)
          continue
        }
        if (buffered.length < 5) return
        const length = buffered.readInt32BE(1)
        if (buffered.length < 1 + length) return
        const type = String.fromCharCode(buffered[0]!)
        const body = buffered.subarray(5, 1 + length)
        const cstrings = body.toString("utf8").split("\u0000")
        const statement = type === "Q" ? cstrings[0]! : type === "E" ? bound : undefined
        if (type === "P") named.set(cstrings[0]!, cstrings[1]!)
        if (type === "B") bound = named.get(cstrings[1]!) ?? "?"
        buffered = buffered.subarray(1 + length)
        if (statement === undefined) continue
        statements.push(statement)
        sent.push(statement)
        if (cutting?.test(statement)) return close()
      }
    })
    upstream.on("data", (chunk) => socket.write(chunk))
    const close = () => {
      open.delete(close)
      socket.destroy()
      upstream.destroy()
    }
    open.set(close, sent)
    socket.on("error", close)
    upstream.on("error", close)
    socket.on("close", close)
    upstream.on("close", close)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const url = new URL(target.href)
  url.hostname = "127.0.0.1"
  url.port = String((server.address() as Net.AddressInfo).port)
  return {
    url: Redacted.make(url.href),
    statements,
    /** The statements so far but those naming `node_revision` or (UN)LISTEN: what read-only requests sent. */
    requestStatements: () => statements.filter((statement) => !isBackground(statement)),
    /**
     * Closes every connection that has sent a statement matching `pattern`, and from now on each one that sends one,
     * as a lost connection; `undefined` stops that.
     */
    cut: (pattern: RegExp | undefined) => {
      cutting = pattern
      if (pattern === undefined) return
      for (const [close, sent] of [...open]) if (sent.some((statement) => pattern.test(statement))) close()
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
