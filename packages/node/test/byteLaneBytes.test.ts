import { describe, expect, it } from "@effect/vitest"
import * as Http from "node:http"
import * as Net from "node:net"
import { standInLane } from "./support/StandInLane.ts"

/**
 * The byte lane reads its upstream connections into one shared buffer, and its client connections into another:
 * every byte a client receives must be the worker's, whatever the reads' boundaries (a head split across reads, a body
 * in many reads) and while a slow client holds the response back; every request byte must reach the worker or, once
 * the connection is node's, node's HTTP server.
 */
describe("the byte lane's bytes", () => {
  const bodyBytes = 3 * 1024 * 1024 + 17
  /** The body of `/<framing>/<seed>`: bytes no other seed's body has at the same place. */
  const bodyOf = (seed: number) => {
    const body = Buffer.alloc(bodyBytes)
    for (let at = 0; at < bodyBytes; at++) body[at] = (at * 7 + (at >> 12) + seed * 31) % 251
    return body
  }

  /**
   * The response to `/length/<seed>` or `/chunked/<seed>`, in pieces: the head's first bytes alone (the next piece a
   * while later, so the lane reads them apart), then the rest one event-loop turn apart.
   */
  const piecesOf = (path: string): Array<Buffer> => {
    const body = bodyOf(Number(path.split("/")[2]))
    if (path.startsWith("/length")) {
      const head = Buffer.from(
        `HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\ncontent-length: ${bodyBytes}\r\n\r\n`
      )
      const pieces = [head.subarray(0, 20), Buffer.concat([head.subarray(20), body.subarray(0, 1000)])]
      for (let at = 1000; at < bodyBytes; at += 100_000) pieces.push(body.subarray(at, at + 100_000))
      return pieces
    }
    const pieces = [Buffer.from("HTTP/1.1 200 OK\r\ntransfer-"), Buffer.from("encoding: chunked\r\n\r\n")]
    for (let at = 0; at < bodyBytes; at += 70_000) {
      const part = body.subarray(at, at + 70_000)
      pieces.push(Buffer.concat([Buffer.from(`${part.length.toString(16)}\r\n`), part, Buffer.from("\r\n")]))
    }
    pieces.push(Buffer.from("0\r\n\r\n"))
    return pieces
  }

  const setUp = async () => {
    return standInLane({
      prefix: "byte-lane-bytes-",
      keepAliveMs: 5_000,
      serveWorker: (socket) => {
        let text = ""
        let queue = Promise.resolve()
        socket.on("data", (chunk) => {
          text += chunk.toString("latin1")
          for (let end = text.indexOf("\r\n\r\n"); end >= 0; end = text.indexOf("\r\n\r\n")) {
            const path = /^GET (\S+)/.exec(text)?.[1] ?? "/length/0"
            text = text.slice(end + 4)
            queue = queue.then(async () => {
              if (path.startsWith("/close")) {
                // No length, no chunks: the body ends when the worker closes its side.
                socket.write("HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\n\r\n")
                await new Promise((resolve) => setTimeout(resolve, 30))
                const body = bodyOf(Number(path.split("/")[2]))
                for (let at = 0; at < bodyBytes; at += 100_000) {
                  socket.write(body.subarray(at, at + 100_000))
                  await new Promise((resolve) => setImmediate(resolve))
                }
                socket.end()
                return
              }
              for (const [index, piece] of piecesOf(path).entries()) {
                socket.write(piece)
                await new Promise((resolve) => (index === 0 ? setTimeout(resolve, 30) : setImmediate(resolve)))
              }
            })
          }
        })
      }
    })
  }

  /** Everything the client receives until `responses` bodies of `bodyBytes` are in, read slowly at first. */
  const fetchAll = (port: number, paths: ReadonlyArray<string>) =>
    new Promise<Buffer>((resolve, reject) => {
      const socket = Net.connect(port, "127.0.0.1")
      const chunks: Array<Buffer> = []
      let size = 0
      let slowReads = 20
      socket.on("data", (chunk) => {
        chunks.push(chunk)
        size += chunk.length
        // The client stops reading now and then: the lane must hold the worker's body back, not lose or reorder it.
        if (slowReads-- > 0) {
          socket.pause()
          setTimeout(() => socket.resume(), 20)
        }
        if (size >= paths.length * bodyBytes) {
          const all = Buffer.concat(chunks)
          if (bodiesIn(all, paths).length === paths.length) {
            socket.destroy()
            resolve(all)
          }
        }
      })
      socket.on("error", reject)
      socket.write(paths.map((path) => `GET ${path} HTTP/1.1\r\nHost: worker.test\r\n\r\n`).join(""))
    })

  /** The bodies of the responses in `all`, as the client's framing reads them. */
  const bodiesIn = (all: Buffer, paths: ReadonlyArray<string>): Array<Buffer> => {
    const bodies: Array<Buffer> = []
    let at = 0
    for (const path of paths) {
      const end = all.indexOf("\r\n\r\n", at)
      if (end < 0) return bodies
      const head = all.toString("latin1", at, end)
      at = end + 4
      if (path.startsWith("/length")) {
        expect(head).toContain(`content-length: ${bodyBytes}`)
        if (all.length < at + bodyBytes) return bodies
        bodies.push(all.subarray(at, at + bodyBytes))
        at += bodyBytes
        continue
      }
      expect(head).toContain("transfer-encoding: chunked")
      const parts: Array<Buffer> = []
      for (;;) {
        const line = all.indexOf("\r\n", at)
        if (line < 0) return bodies
        const size = parseInt(all.toString("latin1", at, line), 16)
        if (all.length < line + 2 + size + 2) return bodies
        parts.push(all.subarray(line + 2, line + 2 + size))
        at = line + 2 + size + 2
        if (size === 0) break
      }
      bodies.push(Buffer.concat(parts))
    }
    return bodies
  }

  it("bodies in many reads, behind heads split across reads, reach slow clients on two connections at once byte for byte", async () => {
    const { ended, port, close } = await setUp()
    try {
      const clients = [
        ["/length/1", "/chunked/2"],
        ["/chunked/3", "/length/4"]
      ]
      const received = await Promise.all(clients.map((paths) => fetchAll(port, paths)))
      clients.forEach((paths, index) => {
        const bodies = bodiesIn(received[index]!, paths)
        expect(bodies).toHaveLength(2)
        bodies.forEach((one, at) => expect(one.equals(bodyOf(Number(paths[at]!.split("/")[2])))).toBe(true))
      })
      expect(ended).toEqual(Array.from({ length: 4 }, () => ({ outcome: "ok", status: 200 })))
    } finally {
      close()
    }
  })

  it("a body framed by the worker closing its side reaches the client whole, then the client's connection closes", async () => {
    const { ended, port, close } = await setUp()
    try {
      const socket = Net.connect(port, "127.0.0.1")
      const chunks: Array<Buffer> = []
      socket.on("data", (chunk) => void chunks.push(chunk))
      socket.write("GET /close/5 HTTP/1.1\r\nHost: worker.test\r\n\r\n")
      await new Promise((resolve) => socket.on("close", resolve))
      const all = Buffer.concat(chunks)
      const end = all.indexOf("\r\n\r\n")
      expect(all.toString("latin1", 0, end)).toContain("connection: close")
      expect(all.subarray(end + 4).equals(bodyOf(5))).toBe(true)
      expect(ended).toEqual([{ outcome: "ok", status: 200 }])
    } finally {
      close()
    }
  })

  it("request heads split across reads and pipelined behind each other on two connections at once are each answered in order", async () => {
    const { ended, port, close } = await setUp()
    try {
      const paths = [
        ["/length/6", "/chunked/7", "/length/8"],
        ["/chunked/9", "/length/10", "/chunked/11"]
      ]
      const received = await Promise.all(
        paths.map(async (three) => {
          const socket = Net.connect(port, "127.0.0.1")
          const chunks: Array<Buffer> = []
          let size = 0
          const all = new Promise<Buffer>((resolve) =>
            socket.on("data", (chunk) => {
              chunks.push(chunk)
              size += chunk.length
              if (size < three.length * bodyBytes) return
              const whole = Buffer.concat(chunks)
              if (bodiesIn(whole, three).length === three.length) resolve(whole)
            })
          )
          const text = three.map((path) => `GET ${path} HTTP/1.1\r\nHost: worker.test\r\n\r\n`).join("")
          // Cut inside the first head, inside the second and between the third's last CRLFs: each read leaves part of
          // a head the lane must keep until the next, while the other connection's reads go through the same buffer.
          const cuts = [9, text.indexOf("Host", 40), text.length - 2]
          let at = 0
          for (const cut of [...cuts, text.length]) {
            socket.write(text.slice(at, cut))
            at = cut
            await new Promise((resolve) => setTimeout(resolve, 30))
          }
          const whole = await all
          socket.destroy()
          return whole
        })
      )
      paths.forEach((three, index) => {
        const bodies = bodiesIn(received[index]!, three)
        bodies.forEach((one, at) => expect(one.equals(bodyOf(Number(three[at]!.split("/")[2])))).toBe(true))
      })
      expect(ended).toHaveLength(6)
    } finally {
      close()
    }
  })

  it("a connection handed to node's HTTP server gets every byte the lane did not take, and after an upgrade its reads go to the upgraded socket", async () => {
    const node = Http.createServer((request, response) => {
      let body = ""
      request.on("data", (chunk) => (body += chunk))
      request.on("end", () => response.end(`node ${request.method} ${request.url} ${body}`))
    })
    node.on("upgrade", (_request, socket: Net.Socket, head: Buffer) => {
      socket.write("HTTP/1.1 101 Switching Protocols\r\nupgrade: echo\r\nconnection: upgrade\r\n\r\n")
      if (head.length > 0) socket.write(head)
      socket.on("data", (chunk) => socket.write(chunk))
    })
    const { ended, port, close } = await standInLane({
      prefix: "byte-lane-handover-",
      keepAliveMs: 5_000,
      serveWorker: (socket) =>
        socket.on("data", () => socket.write("HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello")),
      handOver: (socket) => void node.emit("connection", socket)
    })
    try {
      const socket = Net.connect(port, "127.0.0.1")
      let received = ""
      socket.on("data", (chunk) => (received += chunk.toString("latin1")))
      const until = async (check: () => boolean) => {
        const end = performance.now() + 10_000
        while (!check() && performance.now() < end) await new Promise((resolve) => setTimeout(resolve, 20))
        expect(check()).toBe(true)
      }
      // A GET the lane takes, then in the same write a POST it does not: the POST and its body are node's.
      socket.write(
        "GET /one HTTP/1.1\r\nHost: app.test\r\n\r\n" +
          "POST /form HTTP/1.1\r\nHost: app.test\r\ncontent-length: 7\r\n\r\nx=1&y=2"
      )
      await until(() => received.includes("node POST /form x=1&y=2"))
      expect(received.indexOf("hello")).toBeLessThan(received.indexOf("node POST"))
      socket.write("GET /ws HTTP/1.1\r\nHost: app.test\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
      await until(() => received.includes("101 Switching Protocols"))
      socket.write("ping after the upgrade")
      await until(() => received.includes("ping after the upgrade"))
      expect(ended).toEqual([{ outcome: "ok", status: 200 }])
      socket.destroy()
    } finally {
      close()
      node.close()
    }
  })
})
