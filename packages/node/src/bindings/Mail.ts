import type { Ai, Email } from "@hostplane/core"
import { Cause, Effect, Exit, Stream } from "effect"
import { randomBytes } from "node:crypto"
import { BindingFailure } from "./Failure.ts"

/** The worker's words for the relay's and the gateway's refusals (decisions.md part 13). */
const codeOfTag: Record<string, string> = {
  Forbidden: "from_not_allowed",
  MailRateLimited: "mail_rate_limited",
  NotGranted: "not_granted",
  NotFound: "not_found",
  BadRequest: "bad_request",
  PayloadTooLarge: "payload_too_large",
  MailUnavailable: "mail_unavailable",
  MailSendFailed: "mail_send_failed",
  Unauthorized: "unauthorized",
  UnknownModel: "unknown_model",
  RateLimited: "rate_limited",
  DailyLimit: "daily_limit",
  InsufficientBalance: "insufficient_balance",
  AiUnavailable: "ai_unavailable",
  AiUpstreamError: "ai_upstream_error"
}

/** Runs a relay or gateway call; its typed refusal becomes a rejection whose message starts with its code. */
const run = async <A>(effect: Effect.Effect<A, { readonly _tag: string; readonly message: string }>): Promise<A> => {
  const exit = await Effect.runPromiseExit(effect)
  if (Exit.isSuccess(exit)) return exit.value
  const failure = Cause.findErrorOption(exit.cause)
  if (failure._tag === "Some") {
    const code = codeOfTag[failure.value._tag] ?? "internal"
    throw new BindingFailure(code, failure.value.message)
  }
  throw Cause.squash(exit.cause)
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

/** `env.email.send`: through the node mail relay (part 6), which checks the grant, the From and the hourly cap. */
export const sendMail = async (
  relay: Email.MailRelay["Service"],
  projectId: string,
  binding: Email.EmailBinding,
  message: unknown
) => {
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
  } else raw = messageOf(fields, binding.from)
  const bytes = new Uint8Array(Buffer.from(raw, "utf8"))
  return run(relay.send(projectId, Stream.make(bytes), bytes.byteLength))
}

/** Most bytes of a chat body a worker may send (the gateway counts tokens; this only bounds the node's memory). */
const maxChatBytes = 4 * 1024 * 1024

/** `env.ai.chat`: the OpenAI chat-completions body through the AI gateway with the project's key. */
export const chat = async (gateway: Ai.AiGateway["Service"], key: string, body: unknown) => {
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new BindingFailure("bad_request", "chat takes the chat-completions request body as an object")
  }
  if ((body as { stream?: unknown }).stream === true) {
    throw new BindingFailure("bad_request", "env.ai.chat answers whole responses: leave stream unset")
  }
  const text = JSON.stringify(body)
  if (Buffer.byteLength(text) > maxChatBytes) {
    throw new BindingFailure("payload_too_large", `a chat body is at most ${maxChatBytes} bytes`)
  }
  const answer = await run(gateway.chat(key, text))
  if (answer._tag !== "json") throw new BindingFailure("ai_upstream_error", "the gateway answered a stream")
  return JSON.parse(answer.body) as unknown
}
