import { Node } from "@hostplane/core"
import { Effect } from "effect"
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
    return handlers.handleAll({
      state: ({ headers, query }) =>
        Effect.andThen(nodes.authorize(bearer(headers.authorization)), nodes.state(query.after ?? 0)),
      secrets: ({ headers, params }) =>
        Effect.andThen(nodes.authorize(bearer(headers.authorization)), nodes.secrets(params.projectId)).pipe(
          Effect.map(noStore)
        ),
      usage: ({ headers, payload }) =>
        Effect.andThen(nodes.authorize(bearer(headers.authorization)), nodes.usage(payload))
    })
  })
)
