import { CertificateBook, servedCertificate } from "@hostplane/adapters-providers/tls/CertificateBook"
import { edgeTlsServer } from "@hostplane/adapters-providers/tls/EdgeTlsServer"
import { testAuthority } from "@hostplane/testkit"
import { connect as h2connect } from "node:http2"
import { connect as netConnect } from "node:net"
import { connect as tlsConnect, type ConnectionOptions, type TLSSocket } from "node:tls"
import type { Http2SecureServer } from "node:http2"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const ca = testAuthority()
const wildcard = ca.issue(["*.apps.test", "apps.test"])
const own = ca.issue(["shop.example.org"])

const listen = async (server: Http2SecureServer) => {
  server.on("request", (request, response) => {
    response.setHeader("content-type", "text/plain")
    response.end(`${request.httpVersion} ${request.headers[":authority"] ?? request.headers.host}`)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return (server.address() as { port: number }).port
}

/** Completes a handshake and answers the peer certificate's names, the protocol and ALPN; rejects on failure. */
const handshake = (port: number, options: ConnectionOptions) =>
  new Promise<{ names: string; protocol: string | null; alpn: string | false | null }>((resolve, reject) => {
    const socket: TLSSocket = tlsConnect({ host: "127.0.0.1", port, ca: ca.root, ...options }, () => {
      const names = socket.getPeerCertificate().subjectaltname ?? ""
      resolve({ names, protocol: socket.getProtocol(), alpn: socket.alpnProtocol })
      socket.end()
    })
    socket.on("error", reject)
  })

const alive = async (port: number) =>
  expect((await handshake(port, { servername: "a.apps.test" })).names).toContain("*.apps.test")

describe("the edge's TLS listener with a static certificate", () => {
  let server: Http2SecureServer
  let port: number
  const book = new CertificateBook({ ...servedCertificate(wildcard.chain, wildcard.key), ...wildcard })
  beforeAll(async () => {
    book.set("shop.example.org", servedCertificate(own.chain, own.key))
    server = edgeTlsServer(book)
    port = await listen(server)
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  it("chooses the certificate by SNI: a name's own, the static one for the names it covers", async () => {
    expect((await handshake(port, { servername: "shop.example.org" })).names).toBe("DNS:shop.example.org")
    expect((await handshake(port, { servername: "x.apps.test" })).names).toContain("DNS:*.apps.test")
  })

  it("answers no SNI and an unknown SNI with the static certificate", async () => {
    expect((await handshake(port, { servername: "", checkServerIdentity: () => undefined })).names).toContain(
      "*.apps.test"
    )
    await expect(handshake(port, { servername: "unknown.example.net" })).rejects.toThrow(/altnames|Host/)
    const unknown = await handshake(port, { servername: "unknown.example.net", checkServerIdentity: () => undefined })
    expect(unknown.names).toContain("*.apps.test")
  })

  it("speaks TLS 1.2 and 1.3, and refuses 1.1", async () => {
    expect((await handshake(port, { servername: "a.apps.test", maxVersion: "TLSv1.2" })).protocol).toBe("TLSv1.2")
    expect((await handshake(port, { servername: "a.apps.test", minVersion: "TLSv1.3" })).protocol).toBe("TLSv1.3")
    await expect(
      handshake(port, {
        servername: "a.apps.test",
        minVersion: "TLSv1",
        maxVersion: "TLSv1.1",
        ciphers: "DEFAULT@SECLEVEL=0"
      })
    ).rejects.toThrow()
    await alive(port)
  })

  it("negotiates h2 and http/1.1 by ALPN and serves both", async () => {
    expect((await handshake(port, { servername: "a.apps.test", ALPNProtocols: ["h2", "http/1.1"] })).alpn).toBe("h2")
    expect((await handshake(port, { servername: "a.apps.test", ALPNProtocols: ["http/1.1"] })).alpn).toBe("http/1.1")
    const session = h2connect(`https://127.0.0.1:${port}`, { ca: ca.root, servername: "a.apps.test" })
    const body = await new Promise<string>((resolve, reject) => {
      const stream = session.request({ ":path": "/", ":authority": "a.apps.test" })
      let text = ""
      stream.on("data", (chunk) => (text += chunk))
      stream.on("end", () => resolve(text))
      stream.on("error", reject)
    })
    session.close()
    expect(body).toBe("2.0 a.apps.test")
    const http1 = await new Promise<string>((resolve, reject) => {
      const socket = tlsConnect({ host: "127.0.0.1", port, servername: "a.apps.test", ca: ca.root }, () => {
        socket.write("GET / HTTP/1.1\r\nHost: a.apps.test\r\nConnection: close\r\n\r\n")
      })
      let text = ""
      socket.on("data", (chunk) => (text += chunk))
      socket.on("end", () => resolve(text))
      socket.on("error", reject)
    })
    expect(http1).toMatch(/^HTTP\/1\.1 200/)
    expect(http1).toContain("1.1 a.apps.test")
  })

  it("survives a malformed ClientHello, plain HTTP on its port and an early close", async () => {
    const send = (bytes: Buffer | string) =>
      new Promise<string>((resolve) => {
        const socket = netConnect({ host: "127.0.0.1", port }, () => socket.write(bytes))
        let text = ""
        socket.on("data", (chunk) => (text += chunk))
        socket.on("close", () => resolve(text))
        socket.on("error", () => resolve(text))
      })
    // A TLS record header announcing a handshake, then garbage.
    await send(
      Buffer.concat([Buffer.from([0x16, 0x03, 0x01, 0x00, 0x40, 0x01, 0x00, 0x00, 0x3c]), Buffer.alloc(60, 0xff)])
    )
    expect(await send("GET / HTTP/1.1\r\nHost: a.apps.test\r\n\r\n")).not.toContain("200")
    await new Promise<void>((resolve) => {
      const socket = netConnect({ host: "127.0.0.1", port }, () => socket.end(Buffer.from([0x16, 0x03])))
      socket.on("close", () => resolve())
      socket.on("error", () => resolve())
    })
    await alive(port)
  })

  it("cuts a handshake that stalls", async () => {
    const closed = await new Promise<boolean>((resolve) => {
      const socket = netConnect({ host: "127.0.0.1", port })
      socket.on("close", () => resolve(true))
      socket.on("error", () => {})
    })
    expect(closed).toBe(true)
    await alive(port)
  }, 30_000)

  it("serves a replaced certificate at the next handshake and forgets a removed one", async () => {
    const renewed = ca.issue(["shop.example.org", "www.shop.example.org"])
    book.set("shop.example.org", servedCertificate(renewed.chain, renewed.key))
    expect((await handshake(port, { servername: "shop.example.org" })).names).toContain("www.shop.example.org")
    book.delete("shop.example.org")
    const after = await handshake(port, { servername: "shop.example.org", checkServerIdentity: () => undefined })
    expect(after.names).toContain("*.apps.test")
    expect(book.covers("shop.example.org")).toBe(false)
    expect(book.covers("x.apps.test")).toBe(true)
    expect(book.covers("a.b.apps.test")).toBe(false)
  })
})

describe("the edge's TLS listener without a static certificate", () => {
  let server: Http2SecureServer
  let port: number
  const book = new CertificateBook(undefined)
  beforeAll(async () => {
    book.set("shop.example.org", servedCertificate(own.chain, own.key))
    server = edgeTlsServer(book)
    port = await listen(server)
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  it("fails the handshake cleanly for no SNI and an unknown SNI, and still serves a known name", async () => {
    await expect(handshake(port, { servername: "", checkServerIdentity: () => undefined })).rejects.toThrow()
    await expect(
      handshake(port, { servername: "unknown.example.net", checkServerIdentity: () => undefined })
    ).rejects.toThrow()
    expect((await handshake(port, { servername: "shop.example.org" })).names).toBe("DNS:shop.example.org")
  })

  it("refuses a certificate with a key that is not its own, without echoing the key", () => {
    expect(() => servedCertificate(own.chain, wildcard.key)).toThrow("does not match")
    expect(() => servedCertificate(own.chain, "not a key")).toThrow(/^the private key is not a PEM private key$/)
  })
})

/** Two handshakes, the second offering the first's session: whether it was resumed (no full handshake). */
const resumes = (port: number, options: ConnectionOptions) =>
  new Promise<boolean>((resolve, reject) => {
    const first: TLSSocket = tlsConnect({ host: "127.0.0.1", port, ca: ca.root, ...options })
    first.on("error", reject)
    // TLS 1.3 sends its tickets after the handshake: the session to offer comes with the `session` event.
    first.once("session", (session) => {
      first.end()
      const second: TLSSocket = tlsConnect({ host: "127.0.0.1", port, ca: ca.root, ...options, session }, () => {
        resolve(second.isSessionReused())
        second.end()
      })
      second.on("error", reject)
    })
  })

describe("TLS session resumption at the edge", () => {
  let server: Http2SecureServer
  let port: number
  const book = new CertificateBook({ ...servedCertificate(wildcard.chain, wildcard.key), ...wildcard })
  beforeAll(async () => {
    book.set("shop.example.org", servedCertificate(own.chain, own.key))
    server = edgeTlsServer(book)
    port = await listen(server)
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  it("resumes a session for a name's own certificate and for the static one, over TLS 1.3 and 1.2", async () => {
    for (const servername of ["shop.example.org", "a.apps.test"]) {
      expect(await resumes(port, { servername, minVersion: "TLSv1.3" })).toBe(true)
      expect(await resumes(port, { servername, maxVersion: "TLSv1.2" })).toBe(true)
    }
  })
})
