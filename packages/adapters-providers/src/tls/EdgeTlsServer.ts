import type { Http2SecureServer } from "node:http2"
import type { CertificateBook } from "./CertificateBook.ts"

/** A TLS handshake not finished by then is cut: a client that opens a connection and stalls holds nothing longer. */
export const handshakeTimeoutMs = 10_000

/**
 * The edge's TLS listener (decisions.md part 16): HTTP/2 and HTTP/1.1 by ALPN (`allowHTTP1`), TLS 1.2 and 1.3, the
 * certificate chosen by SNI from `book`. A handshake without SNI or for a name the book has no certificate for gets
 * the static certificate (the default context), else fails: the server has no certificate to offer. A broken
 * ClientHello, plain HTTP sent to this port, or a stalled handshake ends that one connection (`tlsClientError`),
 * never the process. `node:http2` is loaded here, not at start (about 15 ms of CPU): most servers listen without TLS.
 */
export const edgeTlsServer = (book: CertificateBook, onClientError?: (error: Error) => void): Http2SecureServer => {
  const server = process.getBuiltinModule("node:http2").createSecureServer({
    allowHTTP1: true,
    minVersion: "TLSv1.2",
    handshakeTimeout: handshakeTimeoutMs,
    ...(book.fallback === undefined ? {} : { cert: book.fallback.chain, key: book.fallback.key }),
    SNICallback: (servername, callback) => callback(null, book.contextFor(servername))
  })
  server.on("tlsClientError", (error, socket) => {
    onClientError?.(error)
    socket.destroy()
  })
  // A session's own error (a peer resetting mid-stream) ends that session, not the server.
  server.on("sessionError", () => {})
  return server
}
