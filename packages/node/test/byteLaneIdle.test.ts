import { describe, expect, it } from "@effect/vitest"
import * as Net from "node:net"
import { standInLane } from "./support/StandInLane.ts"

/**
 * The byte lane's keep-alive on its own, in front of a stand-in worker socket: an idle connection closes after the
 * keep-alive time as node's server closes one; a request that takes longer than that is answered whole first.
 */
describe("the byte lane's idle connections", () => {
  const keepAliveMs = 300

  /** A worker socket that answers each request after `delayMs` (from the request's path), and a lane in front. */
  const setUp = async () => {
    return standInLane({
      prefix: "byte-lane-idle-",
      keepAliveMs,
      serveWorker: (socket) => {
        let text = ""
        socket.on("data", (chunk) => {
          text += chunk.toString("latin1")
          for (let end = text.indexOf("\r\n\r\n"); end >= 0; end = text.indexOf("\r\n\r\n")) {
            const head = text.slice(0, end)
            text = text.slice(end + 4)
            const delayMs = Number(/^GET \/(\d+)/.exec(head)?.[1] ?? "0")
            setTimeout(() => socket.write("HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello"), delayMs)
          }
        })
      }
    })
  }

  /** A client connection: what it received, and when the lane closed it. */
  const client = (port: number) => {
    const socket = Net.connect(port, "127.0.0.1")
    let received = ""
    let closedAt: number | undefined
    socket.on("data", (chunk) => (received += chunk.toString("latin1")))
    socket.on("close", () => (closedAt = performance.now()))
    return {
      socket,
      received: () => received,
      closedAt: () => closedAt,
      responses: () => received.split("HTTP/1.1 200 OK").length - 1
    }
  }

  const until = async (check: () => boolean, ms: number) => {
    const end = performance.now() + ms
    while (!check() && performance.now() < end) await new Promise((resolve) => setTimeout(resolve, 20))
    return check()
  }

  it("a request that takes longer than the keep-alive time is answered whole, and the connection closes once idle for that time", async () => {
    const setup = await setUp()
    try {
      const one = client(setup.port)
      const slow = keepAliveMs * 3
      one.socket.write(`GET /${slow} HTTP/1.1\r\nHost: app.test\r\n\r\n`)
      expect(await until(() => one.responses() === 1 || one.closedAt() !== undefined, 10_000)).toBe(true)
      // The response came although no byte moved for longer than the keep-alive time while the worker took its time.
      expect(one.responses()).toBe(1)
      expect(one.received()).toContain("\r\n\r\nhello")
      expect(setup.ended).toEqual([{ outcome: "ok", status: 200 }])
      // A second request on the same connection: it is still the lane's.
      one.socket.write("GET /0 HTTP/1.1\r\nHost: app.test\r\n\r\n")
      expect(await until(() => one.responses() === 2, 10_000)).toBe(true)
      expect(one.closedAt()).toBeUndefined()
      // Idle now: closed by the lane.
      expect(await until(() => one.closedAt() !== undefined, 10_000)).toBe(true)
    } finally {
      setup.close()
    }
  })

  it("a connection that never sends a request is closed after the keep-alive time", async () => {
    const setup = await setUp()
    try {
      const one = client(setup.port)
      expect(await until(() => one.closedAt() !== undefined, 10_000)).toBe(true)
      expect(one.responses()).toBe(0)
    } finally {
      setup.close()
    }
  })
})
