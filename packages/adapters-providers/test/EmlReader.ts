/** A deliberately small RFC 5322 / MIME reader for tests: unfolds headers, decodes RFC 2047 words and the body. */
export interface ParsedEml {
  readonly headers: ReadonlyMap<string, string>
  /** Header values with encoded-words decoded. */
  readonly decoded: (name: string) => string | undefined
  /** The raw header lines, unfolded. */
  readonly headerLines: ReadonlyArray<string>
  readonly body: string
}

const decodeWord = (charset: string, encoding: string, text: string): string => {
  if (charset.toLowerCase() !== "utf-8") throw new Error(`unexpected charset ${charset}`)
  if (encoding.toUpperCase() === "B") return Buffer.from(text, "base64").toString("utf8")
  const bytes = text
    .replace(/_/g, " ")
    .replace(/=([0-9A-F]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
  return Buffer.from(bytes, "latin1").toString("utf8")
}

export const decodeWords = (value: string): string =>
  value
    .replace(/(\?=)\s+(=\?)/g, "$1$2")
    .replace(/=\?([^?]+)\?([BQ])\?([^?]*)\?=/gi, (_, charset: string, encoding: string, text: string) =>
      decodeWord(charset, encoding, text)
    )

export const decodeQuotedPrintable = (body: string): string => {
  const soft = body.replace(/=\r\n/g, "")
  const latin1 = soft.replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
  return Buffer.from(latin1, "latin1").toString("utf8")
}

export const readEml = (raw: string): ParsedEml => {
  const split = raw.indexOf("\r\n\r\n")
  if (split < 0) throw new Error("no header/body separator")
  const headerLines = raw
    .slice(0, split)
    .replace(/\r\n[ \t]/g, " ")
    .split("\r\n")
  const headers = new Map<string, string>()
  for (const line of headerLines) {
    const colon = line.indexOf(":")
    headers.set(line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim())
  }
  const rawBody = raw.slice(split + 4)
  const encoding = headers.get("content-transfer-encoding")?.toLowerCase()
  const body =
    encoding === "quoted-printable"
      ? decodeQuotedPrintable(rawBody)
      : encoding === "base64"
        ? Buffer.from(rawBody, "base64").toString("utf8")
        : rawBody
  return {
    headers,
    headerLines,
    decoded: (name) => {
      const value = headers.get(name.toLowerCase())
      return value === undefined ? undefined : decodeWords(value)
    },
    body
  }
}
