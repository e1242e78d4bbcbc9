import { Predicate } from "effect"

/** The parts of an OpenAI chat-completions body the gateway checks; every other field goes to the upstream as sent. */
export interface ChatRequest {
  readonly model: string
  readonly stream: boolean
  /** `max_completion_tokens`, else `max_tokens`, when the caller set one. */
  readonly maxOutputTokens: number | undefined
  /** Whether the caller itself asked for the final usage chunk (`stream_options.include_usage`). */
  readonly wantsUsage: boolean
  readonly inputTokensEstimate: number
  readonly body: Readonly<Record<string, unknown>>
}

/** One rejected field, in the shape of `details.issues`. */
export interface ChatIssue {
  readonly path: ReadonlyArray<string>
  readonly message: string
}

const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) > 0

/** The text of a message's `content`: a string, or the `text` of its parts. */
const contentText = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
      ? content.map((part) => (Predicate.isObject(part) && typeof part.text === "string" ? part.text : "")).join("")
      : ""

/**
 * Input tokens before the upstream counts them: about 4 characters a token (OpenAI's rule of thumb), at least one
 * per message. Only `maxInputTokens` reads it; the charge uses the upstream's own count.
 */
export const estimateTokens = (messages: ReadonlyArray<unknown>): number =>
  messages.reduce<number>(
    (sum, message) =>
      sum + 1 + Math.ceil(contentText(Predicate.isObject(message) ? message.content : undefined).length / 4),
    0
  )

/** Reads a chat-completions body; the issues when it is not one. */
export const parseChatRequest = (text: string): ChatRequest | ReadonlyArray<ChatIssue> => {
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    return [{ path: ["body"], message: "must be a JSON object" }]
  }
  if (!Predicate.isObject(body) || Array.isArray(body)) return [{ path: ["body"], message: "must be a JSON object" }]
  const issues: Array<ChatIssue> = []
  if (typeof body.model !== "string" || body.model === "") issues.push({ path: ["model"], message: "required string" })
  const messages = body.messages
  if (!Array.isArray(messages) || messages.length === 0 || !messages.every(Predicate.isObject)) {
    issues.push({ path: ["messages"], message: "must be a non-empty array of message objects" })
  }
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== "boolean") {
    issues.push({ path: ["stream"], message: "must be a boolean" })
  }
  for (const field of ["max_tokens", "max_completion_tokens"] as const) {
    if (body[field] !== undefined && body[field] !== null && !isCount(body[field])) {
      issues.push({ path: [field], message: "must be a positive integer" })
    }
  }
  const options = body.stream_options
  if (options !== undefined && options !== null && !Predicate.isObject(options)) {
    issues.push({ path: ["stream_options"], message: "must be an object" })
  }
  if (issues.length > 0) return issues
  const max = isCount(body.max_completion_tokens)
    ? body.max_completion_tokens
    : isCount(body.max_tokens)
      ? body.max_tokens
      : undefined
  return {
    model: body.model as string,
    stream: body.stream === true,
    maxOutputTokens: max,
    wantsUsage: Predicate.isObject(options) && options.include_usage === true,
    inputTokensEstimate: estimateTokens(messages as ReadonlyArray<unknown>),
    body
  }
}

/**
 * The body sent upstream: the upstream's model name, the plan's output cap when the caller set none, and (streaming)
 * `stream_options.include_usage`, so the last chunk carries the usage the call is charged from.
 */
export const upstreamBody = (request: ChatRequest, upstreamModel: string, maxOutputTokens: number): string => {
  const body: Record<string, unknown> = { ...request.body, model: upstreamModel }
  if (maxOutputTokens > 0 && request.maxOutputTokens === undefined) body.max_tokens = maxOutputTokens
  if (request.stream) {
    body.stream_options = { ...(body.stream_options as object | undefined), include_usage: true }
  }
  return JSON.stringify(body)
}

/** Token counts from an OpenAI `usage` object; undefined when it has none. */
export const usageOf = (value: unknown): { readonly input: number; readonly output: number } | undefined => {
  if (!Predicate.isObject(value) || !Predicate.isObject(value.usage)) return undefined
  const { prompt_tokens, completion_tokens } = value.usage
  const count = (n: unknown) => (Number.isSafeInteger(n) && (n as number) >= 0 ? (n as number) : undefined)
  const input = count(prompt_tokens)
  const output = count(completion_tokens)
  return input === undefined || output === undefined ? undefined : { input, output }
}

/** Characters of answer text in a completion (`message.content`) or a chunk (`delta.content`). */
export const answerChars = (value: unknown): number => {
  if (!Predicate.isObject(value) || !Array.isArray(value.choices)) return 0
  return value.choices.reduce<number>((sum, choice) => {
    if (!Predicate.isObject(choice)) return sum
    const part = Predicate.isObject(choice.message) ? choice.message : choice.delta
    return sum + (Predicate.isObject(part) ? contentText(part.content).length : 0)
  }, 0)
}

/**
 * Reads server-sent events as they arrive, line by line: notes the usage and the answer's length, and gives back the
 * text to forward (with the catalog's model name, and without the usage-only chunk the caller did not ask for).
 */
export class SseReader {
  private pending = ""
  usage: { readonly input: number; readonly output: number } | undefined = undefined
  chars = 0

  private readonly rename: ((value: Record<string, unknown>) => void) | undefined
  private readonly forwardUsage: boolean

  constructor(rename: ((value: Record<string, unknown>) => void) | undefined, forwardUsage: boolean) {
    this.rename = rename
    this.forwardUsage = forwardUsage
  }

  /** The complete lines of `text` (with what came before), rewritten where needed; a partial line waits. */
  push(text: string): string {
    const all = this.pending + text
    const end = all.lastIndexOf("\n")
    if (end < 0) {
      this.pending = all
      return ""
    }
    this.pending = all.slice(end + 1)
    return this.lines(all.slice(0, end + 1))
  }

  /** Whatever is left once the stream ended. */
  flush(): string {
    const rest = this.pending
    this.pending = ""
    return rest === "" ? "" : this.lines(rest)
  }

  private lines(text: string): string {
    let out = ""
    for (const line of text.split(/(?<=\n)/)) out += this.line(line)
    return out
  }

  private line(line: string): string {
    if (!line.startsWith("data:")) return line
    const payload = line.slice(5).trim()
    if (payload === "" || payload === "[DONE]") return line
    let value: unknown
    try {
      value = JSON.parse(payload)
    } catch {
      return line
    }
    if (!Predicate.isObject(value)) return line
    this.chars += answerChars(value)
    const usage = usageOf(value)
    if (usage !== undefined) {
      this.usage = usage
      const usageOnly = Array.isArray(value.choices) && value.choices.length === 0
      if (!this.forwardUsage && usageOnly) return ""
    }
    if (this.rename === undefined) return line
    this.rename(value)
    return `data: ${JSON.stringify(value)}${line.endsWith("\r\n") ? "\r\n" : line.endsWith("\n") ? "\n" : ""}`
  }
}
