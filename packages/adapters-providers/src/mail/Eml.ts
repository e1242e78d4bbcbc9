import type { Mail } from "@hostplane/core"

const CRLF = "\r\n"

const printableAscii = /^[\x20-\x7e]*$/
const atextPhrase = /^[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~ ]*$/
const dotAtom = /^[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~]+(\.[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~]+)*$/
const hostName = /^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$/

/** Folds CR and LF away so a value can never start a header of its own. */
const oneLine = (value: string): string => value.replace(/[\r\n]+/g, " ").trim()

/** Breaks an ASCII value at spaces so that, after `offset` characters of header name, lines stay within 78. */
const foldAscii = (value: string, offset: number): string => {
  let out = ""
  let column = offset
  value.split(" ").forEach((word, index) => {
    if (index > 0) {
      const fold = column + 1 + word.length > 78 && column > 1
      out += fold ? `${CRLF} ` : " "
      column = fold ? 1 : column + 1
    }
    out += word
    column += word.length
  })
  return out
}

/**
 * An unstructured header value (RFC 5322 section 3.2.5) starting `offset` characters into its line: ASCII is folded
 * at spaces; anything else becomes RFC 2047 `B` encoded-words of at most 64 characters (so a first word after
 * `Subject: ` still fits 78), each holding whole code points, one per folded line.
 */
export const encodeWords = (value: string, offset = 0): string => {
  const line = oneLine(value)
  if (printableAscii.test(line) && !line.includes("=?")) return foldAscii(line, offset)
  const words: Array<string> = []
  let chunk = ""
  for (const codePoint of line) {
    if (chunk !== "" && Buffer.byteLength(chunk + codePoint, "utf8") > 39) {
      words.push(chunk)
      chunk = codePoint
    } else {
      chunk += codePoint
    }
  }
  if (chunk !== "") words.push(chunk)
  return words.map((word) => `=?UTF-8?B?${Buffer.from(word, "utf8").toString("base64")}?=`).join(`${CRLF} `)
}

const displayName = (name: string): string => {
  const unquoted = /^"(.*)"$/.exec(name)?.[1]?.replace(/\\(.)/g, "$1") ?? name
  if (!printableAscii.test(unquoted)) return encodeWords(unquoted)
  if (atextPhrase.test(unquoted)) return unquoted
  return `"${unquoted.replace(/(["\\])/g, "\\$1")}"`
}

/** `Name <addr>` or a bare address, with a non-ASCII name encoded and a name with specials quoted. */
export const encodeAddress = (value: string): string => {
  const line = oneLine(value)
  const match = /^(.*?)\s*<([^<>]*)>$/.exec(line)
  if (match === null) return line
  const name = (match[1] ?? "").trim()
  const address = (match[2] ?? "").trim()
  return name === "" ? `<${address}>` : `${displayName(name)} <${address}>`
}

const addressOf = (value: string): string => /<([^<>]*)>\s*$/.exec(value)?.[1]?.trim() ?? value.trim()

/** `<id@domain>`, the domain taken from the sender so both transports give one message the same id. */
export const messageId = (message: Pick<Mail.MailMessage, "id" | "from">): string => {
  const domain = addressOf(message.from).split("@").pop() ?? ""
  return `<${message.id}@${hostName.test(domain) ? domain : "localhost"}>`
}

/** A mail id that is safe as a file name and as the left part of a Message-ID. */
export const isSafeId = (id: string): boolean => id.length <= 200 && dotAtom.test(id) && !id.startsWith(".")

const days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
const months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
const pad = (n: number): string => String(n).padStart(2, "0")

/** RFC 5322 section 3.3 date-time in UTC, such as `Thu, 01 Jan 1970 00:00:00 +0000`. */
export const formatDate = (epochMillis: number): string => {
  const d = new Date(epochMillis)
  return (
    `${days[d.getUTCDay()]}, ${pad(d.getUTCDate())} ${months[d.getUTCMonth()]} ${d.getUTCFullYear()} ` +
    `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} +0000`
  )
}

const hexByte = (byte: number): string => `=${byte.toString(16).toUpperCase().padStart(2, "0")}`

const quotedPrintableLine = (line: string): string => {
  const bytes = Buffer.from(line, "utf8")
  const out: Array<string> = []
  let current = ""
  bytes.forEach((byte, index) => {
    const last = index === bytes.length - 1
    const literal = (byte >= 33 && byte <= 126 && byte !== 61) || ((byte === 32 || byte === 9) && !last)
    const token = literal ? String.fromCharCode(byte) : hexByte(byte)
    if (current.length + token.length > 75) {
      out.push(`${current}=`)
      current = ""
    }
    current += token
  })
  out.push(current)
  return out.join(CRLF)
}

/** RFC 2045 quoted-printable of UTF-8 text, hard line breaks as CRLF, soft breaks keeping lines at 76. */
export const quotedPrintable = (text: string): string =>
  text.replace(/\r\n?/g, "\n").split("\n").map(quotedPrintableLine).join(CRLF)

/** The whole RFC 5322 message: CRLF line endings, UTF-8 text body in quoted-printable. */
export const render = (message: Mail.MailMessage, epochMillis: number): string => {
  const body = quotedPrintable(message.text)
  return [
    `From: ${encodeAddress(message.from)}`,
    `To: ${encodeAddress(message.to)}`,
    `Subject: ${encodeWords(message.subject, "Subject: ".length)}`,
    `Date: ${formatDate(epochMillis)}`,
    `Message-ID: ${messageId(message)}`,
    "MIME-Version: 1.0",
    "Content-Type: text/plain; charset=utf-8",
    "Content-Transfer-Encoding: quoted-printable",
    "",
    body.endsWith(CRLF) ? body : `${body}${CRLF}`
  ].join(CRLF)
}
