import { Ai } from "@hostplane/core"
import { Effect } from "effect"
import { BindingFailure, runRefusable } from "./Failure.ts"
import { type BindingCall, workerBinding } from "./WorkerBinding.ts"

/** The worker's words for the gateway's refusals (decisions.md part 13). */
const codeOfTag: Record<string, string> = {
  Unauthorized: "unauthorized",
  BadRequest: "bad_request",
  UnknownModel: "unknown_model",
  RateLimited: "rate_limited",
  DailyLimit: "daily_limit",
  InsufficientBalance: "insufficient_balance",
  AiUnavailable: "ai_unavailable",
  AiUpstreamError: "ai_upstream_error"
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
  const answer = await runRefusable(gateway.chat(key, text), codeOfTag)
  if (answer._tag !== "json") throw new BindingFailure("ai_upstream_error", "the gateway answered a stream")
  return JSON.parse(answer.body) as unknown
}

/** `env.ai`: `chat(body)` through the AI gateway with the project's key, when the deployment declares `ai: true`. */
export const aiBinding = workerBinding({
  name: "ai",
  worker: "ai.js",
  // Spec 4.10: the grant and the manifest's `ai: true` both.
  wanted: (manifest) => manifest.ai === true,
  make: () =>
    Effect.map(Effect.service(Ai.AiGateway), (gateway) => ({
      calls: {
        chat: async (call: BindingCall<"ai">, args: ReadonlyArray<unknown>) => ({
          value: await chat(gateway, call.granted().key, args[0])
        })
      }
    })),
  dev: {
    declared: (manifest) => manifest.ai === true,
    unavailable:
      "runs only in a deployed project: the AI gateway takes the project's key, which only the node holds (test AI code with hostplane deploy and hostplane logs --follow)",
    methods: { calls: ["chat"] },
    make: () => undefined
  }
})
