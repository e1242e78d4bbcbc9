/**
 * The byte lane's HTTP/1.1 heads (`ByteLane.ts`): a strict scanner of the request heads it may forward as they are,
 * and the response heads and bodies it copies back. Anything a scanner does not recognize is `null`: the lane then
 * leaves the connection to node's HTTP server, which decides, or (for an upstream response) fails the request.
 */

/** The most bytes of a request head the lane reads; a longer head is node's (its limit is 16 KiB). */
export const maxHeadBytes = 8 * 1024

/** A bodiless request head the lane takes: every header once, names lowercased, values trimmed. */
export interface RequestHead {
  readonly method: "GET" | "HEAD"
  /** The origin-form target as sent: path and query. */
  readonly target: string
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  /** Bytes of the head, its last empty line included. */
  readonly length: number
}

const requestLine = /^(GET|HEAD) (\/[A-Za-z0-9\-._~!$&'()*+,;=:@/%?]*) HTTP\/1\.1$/
const token = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
/** Visible ASCII, space and tab: no control character, no byte above 0x7e. */
const requestValue = /^[\x20-\x7e\t]*$/
const hostValue = /^(?:[A-Za-z0-9\-.]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/
const headEnd = Buffer.from("\r\n\r\n")

/**
 * A head's headers by lowercased name: no prototype to inherit a name from (a header called `constructor` or
 * `__proto__` is a header like any other), yet with a shape of its own, so reads and `for...in` stay on V8's fast
 * path (an `Object.create(null)` record is a dictionary from the start).
 */
const HeaderRecord = function () {} as unknown as new () => Record<string, never>
HeaderRecord.prototype = Object.create(null)

/** Where the line of a head's text starting at `at` ends: its CRLF, or the text's end (the head's last line). */
const lineEnd = (text: string, at: number): number => {
  const end = text.indexOf("\r\n", at)
  return end < 0 ? text.length : end
}

/** `text` from `from` to `to` without the spaces and tabs at either end (a header value as HTTP reads it). */
const trimmed = (text: string, from: number, to: number): string => {
  while (from < to && (text.charCodeAt(from) === 32 || text.charCodeAt(from) === 9)) from++
  while (to > from && (text.charCodeAt(to - 1) === 32 || text.charCodeAt(to - 1) === 9)) to--
  return text.slice(from, to)
}

/** Whether the bytes so far can still become a head the lane takes: no NUL and no LF without its CR. */
const partialIsPlain = (buffer: Buffer): boolean => {
  if (buffer.indexOf(0) >= 0) return false
  for (let at = buffer.indexOf(10); at >= 0; at = buffer.indexOf(10, at + 1)) {
    if (at === 0 || buffer[at - 1] !== 13) return false
  }
  return true
}

/**
 * The first request head in `buffer`: `undefined` while it is incomplete and may still be one the lane takes, `null`
 * when it is not one: anything but `GET|HEAD SP origin-form SP HTTP/1.1`, header lines other than `token: value` of
 * visible ASCII (obs-fold, a bare CR or LF, NUL, bytes above 0x7e), a head above `maxHeadBytes`, a header sent twice,
 * a body or the promise of one (`Content-Length` other than 0, `Transfer-Encoding`, `Expect`), `Upgrade`, a
 * `Connection` other than keep-alive, no `Host` or one that is not a plain host and port.
 */
export const scanRequestHead = (buffer: Buffer): RequestHead | null | undefined => {
  const end = buffer.indexOf(headEnd)
  if (end < 0) return buffer.length >= maxHeadBytes || !partialIsPlain(buffer) ? null : undefined
  if (end + 4 > maxHeadBytes) return null
  const text = buffer.toString("latin1", 0, end)
  const firstEnd = lineEnd(text, 0)
  const first = requestLine.exec(firstEnd === text.length ? text : text.slice(0, firstEnd))
  if (first === null) return null
  const headers: Record<string, string> = new HeaderRecord()
  for (let at = firstEnd + 2; at < text.length;) {
    const stop = lineEnd(text, at)
    const colon = text.indexOf(":", at)
    if (colon <= at || colon >= stop) return null
    const name = text.slice(at, colon)
    const value = trimmed(text, colon + 1, stop)
    if (!token.test(name) || !requestValue.test(value)) return null
    const lower = name.toLowerCase()
    if (lower in headers) return null
    headers[lower] = value
    at = stop + 2
  }
  const length = headers["content-length"]
  const connection = headers.connection
  if (
    (length !== undefined && length !== "0") ||
    headers["transfer-encoding"] !== undefined ||
    headers.expect !== undefined ||
    headers.upgrade !== undefined ||
    (connection !== undefined && connection.toLowerCase() !== "keep-alive") ||
    headers.host === undefined ||
    !hostValue.test(headers.host)
  ) {
    return null
  }
  const target = first[2]!
  const query = target.indexOf("?")
  return {
    method: first[1] as "GET" | "HEAD",
    target,
    path: query < 0 ? target : target.slice(0, query),
    headers,
    length: end + 4
  }
}

/** How a response's body ends. */
export type Framing =
  | { readonly _tag: "None" }
  | { readonly _tag: "Length"; readonly length: number }
  | { readonly _tag: "Chunked" }
  | { readonly _tag: "Close" }

/** An upstream response head: its header lines as sent (name, value), by lowercased name too. */
export interface ResponseHead {
  readonly status: number
  readonly lines: ReadonlyArray<readonly [string, string]>
  readonly headers: Readonly<Record<string, string | Array<string>>>
  readonly framing: Framing
  readonly length: number
}

const statusLine = /^HTTP\/1\.[01] ([0-9]{3})(?: [^\r\n]*)?$/
const responseValue = /^[^\0\r\n]*$/

/**
 * The response head at the start of `buffer` (the answer to a request of `method`): `undefined` while incomplete,
 * `null` when it is not a final HTTP/1.x response head with one clear framing (an informational status, a
 * `Transfer-Encoding` other than chunked, a `Content-Length` that is not one number).
 */
export const scanResponseHead = (buffer: Buffer, method: string): ResponseHead | null | undefined => {
  const end = buffer.indexOf(headEnd)
  if (end < 0) return buffer.length > 64 * 1024 ? null : undefined
  const text = buffer.toString("latin1", 0, end)
  const firstEnd = lineEnd(text, 0)
  const first = statusLine.exec(firstEnd === text.length ? text : text.slice(0, firstEnd))
  if (first === null) return null
  const status = Number(first[1])
  if (status < 200) return null
  const kept: Array<readonly [string, string]> = []
  const headers: Record<string, string | Array<string>> = new HeaderRecord()
  for (let at = firstEnd + 2; at < text.length;) {
    const stop = lineEnd(text, at)
    const colon = text.indexOf(":", at)
    if (colon <= at || colon >= stop) return null
    const name = text.slice(at, colon)
    const value = trimmed(text, colon + 1, stop)
    if (!token.test(name) || !responseValue.test(value)) return null
    kept.push([name, value])
    const lower = name.toLowerCase()
    const before = headers[lower]
    headers[lower] = before === undefined ? value : Array.isArray(before) ? [...before, value] : [before, value]
    at = stop + 2
  }
  const coding = headers["transfer-encoding"]
  const length = headers["content-length"]
  let framing: Framing
  if (method === "HEAD" || status === 204 || status === 304) framing = { _tag: "None" }
  else if (coding !== undefined) {
    if (typeof coding !== "string" || coding.toLowerCase() !== "chunked") return null
    framing = { _tag: "Chunked" }
  } else if (length !== undefined) {
    if (typeof length !== "string" || !/^[0-9]{1,15}$/.test(length)) return null
    framing = { _tag: "Length", length: Number(length) }
  } else framing = { _tag: "Close" }
  return { status, lines: kept, headers, framing, length: end + 4 }
}

const hexValue = (byte: number): number =>
  byte >= 48 && byte <= 57
    ? byte - 48
    : byte >= 97 && byte <= 102
      ? byte - 87
      : byte >= 65 && byte <= 70
        ? byte - 55
        : -1

/**
 * Finds where a chunked body ends, fed its bytes as they come (the bytes themselves pass on unchanged): `feed`
 * answers the offset just past the body's end within the chunk, -1 while it goes on, -2 when it is not chunked coding.
 */
export class ChunkedEnd {
  private state = 0
  private size = 0
  private digits = 0
  private remaining = 0

  feed(chunk: Uint8Array): number {
    for (let at = 0; at < chunk.length; at++) {
      const byte = chunk[at]!
      switch (this.state) {
        case 0: {
          // chunk size: hex digits, then an extension or CRLF
          const value = hexValue(byte)
          if (value >= 0) {
            if (++this.digits > 12) return -2
            this.size = this.size * 16 + value
          } else if (this.digits === 0) return -2
          else if (byte === 59) this.state = 1
          else if (byte === 13) this.state = 2
          else return -2
          break
        }
        case 1:
          if (byte === 13) this.state = 2
          else if (byte === 10) return -2
          break
        case 2:
          if (byte !== 10) return -2
          if (this.size === 0) this.state = 6
          else {
            this.remaining = this.size
            this.state = 3
          }
          break
        case 3: {
          const taken = Math.min(this.remaining, chunk.length - at)
          this.remaining -= taken
          at += taken - 1
          if (this.remaining === 0) this.state = 4
          break
        }
        case 4:
          if (byte !== 13) return -2
          this.state = 5
          break
        case 5:
          if (byte !== 10) return -2
          this.size = 0
          this.digits = 0
          this.state = 0
          break
        case 6:
          // after the last chunk: a trailer line, or the final CRLF
          this.state = byte === 13 ? 9 : byte === 10 ? -1 : 7
          if (this.state === -1) return -2
          break
        case 7:
          if (byte === 13) this.state = 8
          else if (byte === 10) return -2
          break
        case 8:
          if (byte !== 10) return -2
          this.state = 6
          break
        case 9:
          if (byte !== 10) return -2
          this.state = 10
          return at + 1
        default:
          return -2
      }
    }
    return -1
  }
}
