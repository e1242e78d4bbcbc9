import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"

const headers = {
  "cache-control": Schema.Literal("no-store").annotate({
    description: "The body carries a secret: no cache (browser, proxy) may keep it."
  })
}

/** The success schema of a response that carries a secret (a session, a bypass secret, a one-time code). */
export const secretSuccess = <S extends Schema.Top>(schema: S) => HttpApiSchema.WithHeaders(schema, headers)

/** The value a handler of a `secretSuccess` endpoint returns. */
export const noStore = <A>(body: A) =>
  HttpApiSchema.withHeaders({ body, headers: { "cache-control": "no-store" as const } })
