import { Database, Deployments, Edge, EndUser, Errors, Node } from "@hostplane/core"
import { Effect, Option } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { areaApi } from "../Area.ts"
import { noStore } from "@hostplane/api/server/NoStore"
import { NodeApi } from "@hostplane/api/node/NodeApi"

const api = areaApi(NodeApi)

/** The token of `Bearer <token>`; anything else is no token. */
export const bearer = (header: string | undefined): string | undefined => {
  const match = header === undefined ? null : /^Bearer (\S+)$/.exec(header)
  return match?.[1]
}

export const NodeHandlers = HttpApiBuilder.group(
  api,
  "node",
  Effect.fn(function* (handlers) {
    const nodes = yield* Node.Nodes
    const artifacts = yield* Deployments.ArtifactStore
    const passes = yield* Edge.EdgePasses
    const signIns = yield* EndUser.SignInFlow
    const databaseNode = yield* Database.DatabaseNode
    const passOf = (pass: Edge.EdgePass | undefined) => ({ pass: pass?.value ?? null, maxAge: pass?.maxAge ?? 0 })
    /**
     * An accepted bundle's bytes as uploaded. Only digests with a bundle index are served: that is every deployment's
     * bundle, and never the inflated tars stored beside them.
     */
    const artifact = Effect.fnUntraced(function* (digest: string) {
      const unknown = new Errors.NotFound({ message: "no bundle has this digest" })
      if (!Deployments.digestPattern.test(digest)) return yield* unknown
      if (Option.isNone(yield* artifacts.index(digest))) return yield* unknown
      return HttpServerResponse.stream(artifacts.open(digest), {
        contentType: "application/gzip",
        headers: { etag: `"${digest}"`, "cache-control": "private, max-age=31536000, immutable" }
      })
    })
    return handlers.handleAll({
      state: ({ headers, query }) =>
        Effect.andThen(nodes.authorize(bearer(headers.authorization)), nodes.state(query.after ?? 0)),
      secrets: ({ headers, params }) =>
        Effect.andThen(nodes.authorize(bearer(headers.authorization)), nodes.secrets(params.projectId)).pipe(
          // Only a node reading another control plane cannot read them; this one opens its own.
          Effect.catchTag("WorkerUnavailable", Effect.die),
          Effect.map(noStore)
        ),
      artifact: ({ headers, params }) =>
        Effect.andThen(nodes.authorize(bearer(headers.authorization)), artifact(params.digest)),
      usage: ({ headers, payload }) =>
        Effect.andThen(nodes.authorize(bearer(headers.authorization)), nodes.usage(payload)),
      accessCheck: ({ headers, payload }) =>
        Effect.andThen(nodes.authorize(bearer(headers.authorization)), passes.check(payload)).pipe(
          Effect.map((admitted) => ({ admitted }))
        ),
      accessCode: ({ headers, payload }) =>
        Effect.andThen(
          nodes.authorize(bearer(headers.authorization)),
          passes.exchange(payload.host, payload.code)
        ).pipe(Effect.map((pass) => noStore(passOf(pass)))),
      accessPassword: ({ headers, payload }) =>
        Effect.andThen(nodes.authorize(bearer(headers.authorization)), passes.passwordOf(payload)).pipe(
          Effect.map((pass) => noStore(passOf(Option.getOrUndefined(pass))))
        ),
      databaseAuthority: ({ headers }) =>
        Effect.as(nodes.authorize(bearer(headers.authorization)), { authority: databaseNode.authority ?? null }),
      signIn: ({ headers, payload }) =>
        Effect.andThen(nodes.authorize(bearer(headers.authorization)), signIns.handleFor(payload)).pipe(
          Effect.map((answer) => noStore({ answer: Option.getOrNull(answer) }))
        ),
      endUser: ({ headers, payload }) =>
        Effect.andThen(nodes.authorize(bearer(headers.authorization)), signIns.userFor(payload)).pipe(
          Effect.map((user) =>
            noStore({
              user: Option.match(user, {
                onNone: () => null,
                onSome: ({ id, email, name, provider }) => ({ id, email, name, provider })
              })
            })
          )
        )
    })
  })
)
