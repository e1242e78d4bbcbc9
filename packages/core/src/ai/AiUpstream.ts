import { Context, Schema, type Effect, type Stream } from "effect"

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

/** An OpenAI-compatible chat-completions endpoint (`POST {base}/chat/completions`); absent: calls answer 503. */
export class AiUpstream extends Context.Service<
  AiUpstream,
  {
    /** Posts a chat-completions body (JSON text, the upstream's model name in it) with the upstream's credentials. */
    readonly chat: (body: string) => Effect.Effect<UpstreamReply, AiUpstreamFailure>
  }
>()("@hostplane/core/ai/AiUpstream") {}
