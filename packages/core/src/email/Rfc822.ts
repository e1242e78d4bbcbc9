import { Result } from "effect"

/** What the relay reads of a message it hands on unchanged. */
export interface RelayedHeaders {
  /** The `From` header as one line, encoded-words decoded. */
  readonly fromHeader: string
  /** The one address of `From`, lower case. */
  readonly fromAddress: string
  /** `To` and `Cc` addresses, in order, without repeats. */
  readonly recipients: ReadonlyArray<string>
  readonly subject: string
  /** `Message-ID` without brackets; null when absent. */
  readonly messageId: string | null
}

/** Recipients per message: Amazon SES's limit. */
export const maxRecipients = 50

const lenient = new TextDecoder("utf-8")

const headerEnd = (bytes: Uint8Array): number => {
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] !== 0x0a) continue
    if (bytes[i + 1] === 0x0a) return i
    if (bytes[i + 1] === 0x0d && bytes[i + 2] === 0x0a) return i
  }
  return bytes.length
}

/** The header fields, unfolded; a line that is neither a field nor a continuation is an error. */
const fieldsOf = (bytes: Uint8Array): Result.Result<ReadonlyArray<readonly [string, string]>, string> => {
  const text = lenient.decode(bytes.subarray(0, headerEnd(bytes)))
  const fields: Array<[string, string]> = []
  for (const line of text.replace(/\r$/, "").split(/\r?\n/)) {
    if (line === "") continue
    if (/^[ \t]/.test(line)) {
      const last = fields[fields.length - 1]
      if (last === undefined) return Result.fail("the message starts with a continuation line")
      last[1] += ` ${line.trim()}`
      continue
    }
    const match = /^([\x21-\x39\x3b-\x7e]+)[ \t]*:(.*)$/.exec(line)
    if (match === null) return Result.fail(`not a header field: ${JSON.stringify(line.slice(0, 60))}`)
    fields.push([match[1]!.toLowerCase(), match[2]!.trim()])
  }
  return Result.succeed(fields)
}

/** RFC 2047 encoded-words (`B` and `Q`) decoded; whitespace between two of them dropped. */
export const decodeWords = (value: string): string =>
  value
    .replace(/(=\?[^?]+\?[BbQq]\?[^?]*\?=)\s+(?==\?)/g, "$1")
    .replace(/=\?([^?*]+)(?:\*[^?]*)?\?([BbQq])\?([^?]*)\?=/g, (word, charset: string, kind: string, text: string) => {
      const decoded = Result.try(() => {
        const bytes =
          kind.toUpperCase() === "B"
            ? Uint8Array.from(atob(text), (c) => c.charCodeAt(0))
            : Uint8Array.from(
                text
                  .replace(/_/g, " ")
                  .replace(/=([0-9A-Fa-f]{2})|[\s\S]/g, (char, hex: string | undefined) =>
                    hex === undefined ? char : String.fromCharCode(parseInt(hex, 16))
                  ),
                (c) => c.charCodeAt(0)
              )
        return new TextDecoder(charset.trim().toLowerCase()).decode(bytes)
      })
      return Result.getOrElse(decoded, () => word)
    })

/** Splits an address list at commas outside quotes, comments and angle brackets; a group's members are its items. */
const addressItems = (value: string): ReadonlyArray<string> => {
  const items: Array<string> = []
  let current = ""
  let quoted = false
  let depth = 0
  let angle = false
  for (let i = 0; i < value.length; i++) {
    const char = value[i]!
    if (quoted) {
      if (char === "\\") current += value[i++] ?? ""
      else if (char === '"') quoted = false
      current += char
      continue
    }
    if (char === '"') quoted = true
    else if (char === "(") depth += 1
    else if (char === ")") depth = Math.max(depth - 1, 0)
    else if (depth === 0 && char === "<") angle = true
    else if (depth === 0 && char === ">") angle = false
    else if (depth === 0 && !angle && (char === "," || char === ";")) {
      items.push(current)
      current = ""
      continue
    } else if (depth === 0 && !angle && char === ":") {
      // A group's display name: its members follow.
      current = ""
      continue
    }
    current += char
  }
  items.push(current)
  return items.map((item) => item.trim()).filter((item) => item !== "")
}

const addrSpec = /^[^\s@<>()",;:\\]+@[A-Za-z0-9.-]+$/

/** The address of one mailbox (`Name <a@b>` or `a@b (comment)`), lower case; none when it is not one. */
const mailboxAddress = (item: string): string | undefined => {
  const angled = /<([^<>]*)>\s*(?:\([^)]*\)\s*)*$/.exec(item)
  const bare = (angled === null ? item.replace(/\([^)]*\)/g, "") : angled[1]!).trim()
  return addrSpec.test(bare) ? bare.toLowerCase() : undefined
}

const addresses = (header: string, values: ReadonlyArray<string>): Result.Result<ReadonlyArray<string>, string> => {
  const out: Array<string> = []
  for (const value of values) {
    for (const item of addressItems(value)) {
      const address = mailboxAddress(item)
      if (address === undefined) return Result.fail(`${header} holds something that is not an address: ${item}`)
      out.push(address)
    }
  }
  return Result.succeed(out)
}

/**
 * Reads what the relay checks and logs of an RFC 5322 message, never changing it: one `From` with one address, `To`
 * and `Cc` recipients (1 to 50), no `Bcc` (kept byte for byte, it would show the blind recipients to everyone).
 */
export const readRelayed = (bytes: Uint8Array): Result.Result<RelayedHeaders, string> =>
  Result.gen(function* () {
    const fields = yield* fieldsOf(bytes)
    const all = (name: string) => fields.filter(([field]) => field === name).map(([, value]) => value)
    const from = all("from")
    if (from.length !== 1) return yield* Result.fail("the message needs exactly one From header")
    const fromAddresses = yield* addresses("From", from)
    if (fromAddresses.length !== 1) return yield* Result.fail("From must hold exactly one address")
    if (all("bcc").length > 0) {
      return yield* Result.fail("Bcc cannot be relayed as given (every recipient would see it): send one copy each")
    }
    const recipients = [...new Set([...(yield* addresses("To", all("to"))), ...(yield* addresses("Cc", all("cc")))])]
    if (recipients.length === 0) return yield* Result.fail("the message has no recipient in To or Cc")
    if (recipients.length > maxRecipients) {
      return yield* Result.fail(`at most ${maxRecipients} recipients per message`)
    }
    const messageId = all("message-id")[0]?.replace(/^<|>$/g, "").trim()
    return {
      fromHeader: decodeWords(from[0]!),
      fromAddress: fromAddresses[0]!,
      recipients,
      subject: decodeWords(all("subject")[0] ?? ""),
      messageId: messageId === undefined || messageId === "" ? null : messageId
    }
  })
