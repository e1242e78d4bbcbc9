import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

/** One chat-completions request the fake received: the bearer token and the JSON body. */
export interface FakeOpenAiRequest {
  readonly token: string | null
  readonly body: any
}

export interface FakeOpenAiOptions {
  /** The API key the fake accepts; default `"sk-test"`. */
  readonly key?: string
}

export interface FakeOpenAi {
  /** The base URL, for `SERVICE_AI_UPSTREAM_URL` (`<url>/chat/completions` is served). */
  readonly url: string
  readonly key: string
  readonly requests: Array<FakeOpenAiRequest>
  /** The answer's text; streamed as one chunk per word. */
  reply: string
  /** The `usage` every answer reports. */
  usage: { prompt_tokens: number; completion_tokens: number }
  /** Leave `usage` out of answers (and the usage chunk out of streams). */
  omitUsage: boolean
  /** Pause between streamed chunks. */
  chunkDelayMs: number
  /** While set, every call answers this status with an OpenAI error body. */
  failStatus: number | undefined
  /** While true, a stream stops after its first content chunk by dropping the connection. */
  breakStream: boolean
  /** Requests that arrived but whose answer has not ended yet. */
  readonly inFlight: () => number
  readonly close: () => Promise<void>
}

const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    req.on("error", reject)
  })

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" })
  res.end(JSON.stringify(body))
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * A loopback fake of an OpenAI-compatible chat-completions API (`POST /v1/chat/completions`, bearer key): JSON
 * answers with `usage`, server-sent event streams (one chunk per word, the finish chunk, the usage chunk when
 * `stream_options.include_usage` asks for it, `[DONE]`), OpenAI error bodies, and faults a test can switch on.
 */
export const startFakeOpenAi = async (options: FakeOpenAiOptions = {}): Promise<FakeOpenAi> => {
  const key = options.key ?? "sk-test"
  const requests: Array<FakeOpenAiRequest> = []
  let inFlight = 0
  let nextId = 0

  const server = createServer(async (req, res) => {
    inFlight += 1
    res.on("close", () => {
      inFlight -= 1
    })
    const text = await readBody(req)
    const auth = req.headers.authorization ?? ""
    const token = auth.startsWith("Bearer ") ? auth.slice("Bearer ".length) : null
    let body: any = null
    try {
      body = JSON.parse(text)
    } catch {
      return json(res, 400, { error: { message: "invalid JSON body", type: "invalid_request_error" } })
    }
    requests.push({ token, body })
    if (req.method !== "POST" || (req.url ?? "").split("?")[0] !== "/v1/chat/completions") {
      return json(res, 404, { error: { message: "unknown path", type: "invalid_request_error" } })
    }
    if (token !== key) {
      return json(res, 401, { error: { message: "Incorrect API key provided", type: "invalid_request_error" } })
    }
    if (fake.failStatus !== undefined) {
      return json(res, fake.failStatus, { error: { message: `fake failure ${fake.failStatus}`, type: "api_error" } })
    }
    if (typeof body?.model !== "string" || !Array.isArray(body?.messages)) {
      return json(res, 400, { error: { message: "model and messages are required", type: "invalid_request_error" } })
    }
    const id = `chatcmpl-${++nextId}`
    const created = Math.floor(Date.now() / 1000)
    const usage = { ...fake.usage, total_tokens: fake.usage.prompt_tokens + fake.usage.completion_tokens }
    if (body.stream !== true) {
      return json(res, 200, {
        id,
        object: "chat.completion",
        created,
        model: body.model,
        choices: [{ index: 0, message: { role: "assistant", content: fake.reply }, finish_reason: "stop" }],
        ...(fake.omitUsage ? {} : { usage })
      })
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
    const send = (chunk: unknown) => res.write(`data: ${JSON.stringify(chunk)}\n\n`)
    const base = { id, object: "chat.completion.chunk", created, model: body.model }
    send({ ...base, choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] })
    const words = fake.reply.split(/(?<= )/)
    for (const [i, word] of words.entries()) {
      if (fake.chunkDelayMs > 0) await sleep(fake.chunkDelayMs)
      if (res.destroyed) return
      send({ ...base, choices: [{ index: 0, delta: { content: word }, finish_reason: null }] })
      if (fake.breakStream && i === 0) return res.destroy()
    }
    send({ ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })
    if (body.stream_options?.include_usage === true && !fake.omitUsage) send({ ...base, choices: [], usage })
    res.end("data: [DONE]\n\n")
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))

  const fake: FakeOpenAi = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    key,
    requests,
    reply: "Hello from the fake upstream.",
    usage: { prompt_tokens: 12, completion_tokens: 7 },
    omitUsage: false,
    chunkDelayMs: 0,
    failStatus: undefined,
    breakStream: false,
    inFlight: () => inFlight,
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  }
  return fake
}
