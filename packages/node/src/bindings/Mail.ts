import { Email } from "@hostplane/core"
import { Effect, Result, Stream } from "effect"
import { randomBytes } from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { BindingFailure, runRefusable } from "./Failure.ts"
import { type BindingCall, workerBinding } from "./WorkerBinding.ts"

/** The worker's words for the relay's refusals (decisions.md part 13). */
const codeOfTag: Record<string, string> = {
  Forbidden: "from_not_allowed",
  MailRateLimited: "mail_rate_limited",
  NotGranted: "not_granted",
  NotFound: "not_found",
  BadRequest: "bad_request",
  PayloadTooLarge: "payload_too_large",
  MailUnavailable: "mail_unavailable",
  MailSendFailed: "mail_send_failed"
}

const address = /^[^\s<>@,;:"()[\]\\]+@[^\s<>@,;:"()[\]\\]+$/

const addressesOf = (value: unknown, field: string, required: boolean): Array<string> => {
  const list = value === undefined ? [] : Array.isArray(value) ? value : [value]
  if (list.length === 0 && required) throw new BindingFailure("bad_request", `${field} names at least one address`)
  if (list.length > 50) throw new BindingFailure("bad_request", `${field} names at most 50 addresses`)
  for (const item of list) {
    if (typeof item !== "string" || !address.test(item)) {
      throw new BindingFailure("bad_request", `${field} holds addresses like name@example.com`)
    }
  }
  return list as Array<string>
}

const textField = (value: unknown, field: string): string | undefined => {
  if (value === undefined || value === null) return undefined
  if (typeof value !== "string") throw new BindingFailure("bad_request", `${field} is a string`)
  return value
}

/** A header value in RFC 2047 form when it is not plain ASCII. */
const headerText = (text: string) =>
  /^[\x20-\x7e]*$/.test(text) ? text : `=?UTF-8?B?${Buffer.from(text, "utf8").toString("base64")}?=`

const base64Lines = (text: string) => Buffer.from(text, "utf8").toString("base64").replace(/.{76}/g, "$&\r\n")

const part = (type: string, text: string) =>
  `Content-Type: ${type}; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n${base64Lines(text)}\r\n`

/** `send({ to, subject, text?, html?, replyTo? })` as the message the relay takes, from the project's address. */
export const messageOf = (fields: Record<string, unknown>, from: string): string => {
  const to = addressesOf(fields.to, "to", true)
  const replyTo = addressesOf(fields.replyTo, "replyTo", false)
  const subject = textField(fields.subject, "subject")
  if (subject === undefined) throw new BindingFailure("bad_request", "subject is required")
  if (/[\r\n]/.test(subject) || subject.length > 900) {
    throw new BindingFailure("bad_request", "subject is one line of at most 900 characters")
  }
  const text = textField(fields.text, "text")
  const html = textField(fields.html, "html")
  if (text === undefined && html === undefined) throw new BindingFailure("bad_request", "text or html is required")
  const domain = from.slice(from.indexOf("@") + 1)
  const headers = [
    `From: ${from}`,
    `To: ${to.join(", ")}`,
    ...(replyTo.length === 0 ? [] : [`Reply-To: ${replyTo.join(", ")}`]),
    `Subject: ${headerText(subject)}`,
    `Date: ${new Date().toUTCString().replace("GMT", "+0000")}`,
    `Message-ID: <${randomBytes(16).toString("hex")}@${domain}>`,
    "MIME-Version: 1.0"
  ]
  if (text !== undefined && html !== undefined) {
    const boundary = `=_${randomBytes(12).toString("hex")}`
    return [
      ...headers,
      `Content-Type: multipart/alternative; boundary="${boundary}"`,
      "",
      `--${boundary}`,
      part("text/plain", text),
      `--${boundary}`,
      part("text/html", html),
      `--${boundary}--`,
      ""
    ].join("\r\n")
  }
  return `${headers.join("\r\n")}\r\n${part(html === undefined ? "text/plain" : "text/html", (text ?? html)!)}`
}

/** What `env.email.send(message)` sends: a raw message as given, fields as a message from `from`. */
export const rawMessageOf = (message: unknown, from: string): Uint8Array => {
  if (message === null || typeof message !== "object") {
    throw new BindingFailure("bad_request", "send takes { to, subject, text?, html?, replyTo? } or a raw message")
  }
  const fields = message as Record<string, unknown>
  let raw: string
  if ("raw" in fields) {
    if (typeof fields.raw !== "string" || fields.raw === "") {
      throw new BindingFailure("bad_request", "a raw message is a non-empty string")
    }
    raw = fields.raw
  } else raw = messageOf(fields, from)
  return new Uint8Array(Buffer.from(raw, "utf8"))
}

/** `env.email.send`: through the node mail relay (part 6), which checks the grant, the From and the hourly cap. */
export const sendMail = async (
  relay: Email.MailRelay["Service"],
  projectId: string,
  binding: Email.EmailBinding,
  message: unknown
) => {
  const bytes = rawMessageOf(message, binding.from)
  return runRefusable(relay.send(projectId, Stream.make(bytes), bytes.byteLength), codeOfTag)
}

/** `env.email`: `send(message)` through the node mail relay. */
export const emailBinding = workerBinding({
  name: "email",
  worker: "email.js",
  make: () =>
    Effect.map(Effect.service(Email.MailRelay), (relay) => ({
      calls: {
        send: async (call: BindingCall<"email">, args: ReadonlyArray<unknown>) => ({
          value: await sendMail(relay, call.projectId, call.granted(), args[0])
        })
      }
    })),
  dev: {
    declared: (manifest) => manifest.email === true,
    unavailable: "has no local outbox in this dev server",
    methods: { calls: ["send"] },
    make: (local) => {
      const outbox = local.outbox
      if (outbox === undefined) return undefined
      const from = local.mailFrom ?? defaultDevFrom
      return { calls: { send: async (_call, args) => ({ value: sendToOutbox(outbox, from, local.print, args[0]) }) } }
    }
  }
})

/** The From of mail sent under dev when no linked project gives its own address. */
export const defaultDevFrom = "dev@localhost"

const safeName = /[^A-Za-z0-9._-]/g

/**
 * `hostplane dev`'s relay: the relay's checks (size, headers, From), then the message as a file in the outbox instead
 * of a transport, and one line of the dev server's output for it.
 */
const sendToOutbox = (folder: string, from: string, print: (line: string) => void, message: unknown) => {
  const bytes = rawMessageOf(message, from)
  if (bytes.byteLength > Email.maxRelayBytes) {
    throw new BindingFailure("payload_too_large", `a relayed message is at most ${Email.maxRelayBytes} bytes`)
  }
  const read = Email.Rfc822.readRelayed(bytes)
  if (Result.isFailure(read)) {
    throw new BindingFailure("bad_request", `not a message the relay can send: ${read.failure}`)
  }
  const headers = read.success
  if (headers.fromAddress !== from.toLowerCase()) {
    throw new BindingFailure("from_not_allowed", `From must be the project's address ${from}`)
  }
  const id = `mail_dev_${randomBytes(6).toString("hex")}`
  const name = `${new Date().toISOString().replace(/[:.]/g, "-")}-${id}.eml`.replace(safeName, "_")
  Fs.mkdirSync(folder, { recursive: true, mode: 0o700 })
  const file = Path.join(folder, name)
  Fs.writeFileSync(`${file}.tmp`, bytes, { mode: 0o600 })
  Fs.renameSync(`${file}.tmp`, file)
  print(
    `✉ mail  ${headers.fromAddress} → ${headers.recipients.join(", ")}  ${JSON.stringify(headers.subject)}  ${file}`
  )
  return { id, messageId: headers.messageId ?? `${id}@${from.slice(from.indexOf("@") + 1)}` }
}
