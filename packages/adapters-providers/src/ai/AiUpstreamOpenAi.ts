import { Ai } from "@hostplane/core"
import { Duration, Effect, Layer, Option, Redacted, Stream } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"

/** How long the upstream may take to start answering (its headers); a streamed answer may then run as long as it needs. */
export const defaultTimeout = Duration.minutes(2)

export interface Options {
  /** `SERVICE_AI_UPSTREAM_URL`: the base the OpenAI API paths follow (`https://api.openai.com/v1`). */
  readonly url: string
  /** `SERVICE_AI_UPSTREAM_KEY`, sent as `Authorization: Bearer <key>`. */
  readonly key: Redacted.Redacted<string>
  readonly timeout?: Duration.Input | undefined
}

const failure = (reason: Ai.AiUpstreamFailure["reason"], message: string) =>
  new Ai.AiUpstreamFailure({ reason, message })

/**
 * `AiUpstream` as a client of an OpenAI-compatible API: `POST {url}/chat/completions` with the key as a bearer token.
 * The answer's body is handed on as it arrives (server-sent events stay streamed), whatever its status.
 */
export const make = Effect.fnUntraced(function* (options: Options) {
  const endpoint = `${options.url.replace(/\/+$/, "")}/chat/completions`
  const timeout = options.timeout ?? defaultTimeout
  const client = yield* HttpClient.HttpClient
  const chat = Effect.fn("AiUpstreamOpenAi.chat")(function* (body: string) {
    const request = HttpClientRequest.post(endpoint).pipe(
      HttpClientRequest.bearerToken(Redacted.value(options.key)),
      HttpClientRequest.setHeader("user-agent", "hostplane"),
      HttpClientRequest.bodyText(body, "application/json")
    )
    const response = yield* client.execute(request).pipe(
      Effect.mapError((error) => failure("unreachable", `the AI upstream is unreachable: ${error.message}`)),
      Effect.timeoutOrElse({
        duration: timeout,
        orElse: () => Effect.fail(failure("unreachable", "the AI upstream did not answer in time"))
      })
    )
    return {
      status: response.status,
      body: response.stream.pipe(
        Stream.mapError((error) => failure("broken", `the AI upstream's answer broke off: ${error.message}`))
      )
    } satisfies Ai.UpstreamReply
  })
  return Ai.AiUpstream.of({ chat })
})

/** The upstream over `fetch`. */
export const layer = (options: Options): Layer.Layer<Ai.AiUpstream> =>
  Layer.effect(Ai.AiUpstream, make(options)).pipe(Layer.provide(FetchHttpClient.layer))

/**
 * `AiUpstream` from `AiConfig` (`SERVICE_AI_UPSTREAM_URL` and `SERVICE_AI_UPSTREAM_KEY`) when both are set, else
 * `AiUpstream.off` (the gateway answers 503 `ai_unavailable`).
 */
export const layerConfig: Layer.Layer<Ai.AiUpstream, never, Ai.AiConfig> = Layer.unwrap(
  Effect.map(Effect.service(Ai.AiConfig), (config) =>
    Option.isSome(config.upstreamUrl) && Option.isSome(config.upstreamKey)
      ? layer({ url: config.upstreamUrl.value, key: config.upstreamKey.value })
      : Ai.AiUpstream.off
  )
)
