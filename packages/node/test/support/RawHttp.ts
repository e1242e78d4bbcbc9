import * as Net from "node:net"

export interface RawReply {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string
}

/** A raw HTTP/1.1 connection: writes bytes as given, and reads responses with a parser of its own. */
export const connectRaw = async (base: string) => {
  const url = new URL(base)
  const socket = Net.connect(Number(url.port), url.hostname)
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve)
    socket.once("error", reject)
  })
  let received = Buffer.alloc(0)
  let ended = false
  const waiters: Array<() => void> = []
  const wake = () => waiters.splice(0).forEach((wake) => wake())
  socket.on("data", (chunk: Buffer) => {
    received = Buffer.concat([received, chunk])
    wake()
  })
  socket.on("close", () => {
    ended = true
    wake()
  })
  socket.on("error", () => {})
  const more = () => new Promise<void>((resolve) => waiters.push(resolve))
  /** The next response on the connection; `undefined` when it closed first. */
  const read = async (method = "GET"): Promise<RawReply | undefined> => {
    for (;;) {
      const end = received.indexOf("\r\n\r\n")
      if (end >= 0) {
        const lines = received.subarray(0, end).toString("latin1").split("\r\n")
        const status = Number(lines[0]!.split(" ")[1])
        const headers: Record<string, string> = {}
        for (const line of lines.slice(1)) {
          const colon = line.indexOf(":")
          headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim()
        }
        const rest = received.subarray(end + 4)
        if (method === "HEAD" || status === 204 || status === 304) {
          received = rest
          return { status, headers, body: "" }
        }
        if (headers["content-length"] !== undefined) {
          const length = Number(headers["content-length"])
          if (rest.length >= length) {
            received = rest.subarray(length)
            return { status, headers, body: rest.subarray(0, length).toString("utf8") }
          }
        } else if (headers["transfer-encoding"] === "chunked") {
          const parts: Array<Buffer> = []
          let at = 0
          for (;;) {
            const line = rest.indexOf("\r\n", at)
            if (line < 0) break
            const size = parseInt(rest.subarray(at, line).toString("latin1"), 16)
            if (size === 0) {
              if (rest.length >= line + 4) {
                received = rest.subarray(line + 4)
                return { status, headers, body: Buffer.concat(parts).toString("utf8") }
              }
              break
            }
            if (rest.length < line + 2 + size + 2) break
            parts.push(rest.subarray(line + 2, line + 2 + size))
            at = line + 2 + size + 2
          }
        } else if (ended) {
          received = Buffer.alloc(0)
          return { status, headers, body: rest.toString("utf8") }
        }
      }
      if (ended) return undefined
      await more()
    }
  }
  return {
    socket,
    write: (text: string) => socket.write(Buffer.from(text, "latin1")),
    read,
    /** Answers once the connection closed (or after `ms`: false). */
    closed: async (ms: number) => {
      const until = Date.now() + ms
      while (!ended && Date.now() < until) await Promise.race([more(), new Promise((r) => setTimeout(r, 50))])
      return ended
    },
    close: () => socket.destroy()
  }
}

/** A bodiless GET head for `host`, with extra header lines. */
export const rawGet = (path: string, host: string, extra = "") =>
  `GET ${path} HTTP/1.1\r\nHost: ${host}\r\n${extra}\r\n`
