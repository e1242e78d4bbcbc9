import { Context, Effect, Layer, Schema, type Stream } from "effect"
import { portOff } from "../kernel/Port.ts"

/**
 * Why the upstream gave no answer: `unreachable` (refused, reset, timed out) or `broken` (the body stopped midway).
 * An answer with an error status is no failure: the gateway reads its status.
 */
export class AiUpstreamFailure extends Schema.TaggedError<AiUpstreamFailure>()("AiUpstreamFailure", {
  reason: Schema.Literals(["unreachable", "broken"]),
  message: Schema.String
}) {}

/** The upstream's answer: its status, and its body as it arrives (JSON, or server-sent events for `stream: true`). */
export interface UpstreamReply {
  readonly status: number
  readonly body: Stream.Stream<Uint8Array, AiUpstreamFailure>
}

/** An OpenAI-compatible chat-completions endpoint (`POST {base}/chat/completions`); `off`: calls answer 503. */
export class AiUpstream extends Context.Service<
  AiUpstream,
  {
    /** Posts a chat-completions body (JSON text, the upstream's model name in it) with the upstream's credentials. */
    readonly chat: (body: string) => Effect.Effect<UpstreamReply, AiUpstreamFailure>
  }
>()("@hostplane/core/ai/AiUpstream") {
  /** No upstream (`SERVICE_AI_UPSTREAM_URL` or `_KEY` unset): the gateway answers 503 `ai_unavailable`. */
  static readonly off: Layer.Layer<AiUpstream> = Layer.sync(AiUpstream, () =>
    portOff({
      chat: () => Effect.fail(new AiUpstreamFailure({ reason: "unreachable", message: "no AI upstream is configured" }))
    })
  )
}
