import { Git, Kernel } from "@hostplane/core"
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { areaApi } from "../Area.ts"
import { noStore } from "@hostplane/api/server/NoStore"
import { CredentialsApi, ReposApi } from "@hostplane/api/git/GitApi"

const api = areaApi(ReposApi, CredentialsApi)

const actor = Effect.service(Kernel.CurrentActor)

const pathOf = (params: { orgSlug: string; projectName: string; repoName: string }): Git.RepoPath => params

const ReposHandlers = HttpApiBuilder.group(
  api,
  "repos",
  Effect.fn(function* (handlers) {
    const repos = yield* Git.Repos
    const items = <A, E, R>(effect: Effect.Effect<ReadonlyArray<A>, E, R>) =>
      Effect.map(effect, (list) => ({ items: list }))
    return handlers.handleAll({
      list: ({ params }) => Effect.flatMap(actor, (a) => items(repos.list(a, params.orgSlug, params.projectName))),
      create: ({ params, payload }) =>
        Effect.flatMap(actor, (a) => repos.create(a, params.orgSlug, params.projectName, payload)),
      get: ({ params }) => Effect.flatMap(actor, (a) => repos.get(a, pathOf(params))),
      update: ({ params, payload }) => Effect.flatMap(actor, (a) => repos.update(a, pathOf(params), payload)),
      remove: ({ params }) => Effect.flatMap(actor, (a) => repos.remove(a, pathOf(params))),
      refUpdates: ({ params }) => Effect.flatMap(actor, (a) => items(repos.refUpdates(a, pathOf(params)))),
      refs: ({ params }) => Effect.flatMap(actor, (a) => repos.refs(a, pathOf(params))),
      tree: ({ params, query }) => Effect.flatMap(actor, (a) => repos.tree(a, pathOf(params), query)),
      blob: ({ params, query }) => Effect.flatMap(actor, (a) => repos.blob(a, pathOf(params), query)),
      commits: ({ params, query }) => Effect.flatMap(actor, (a) => items(repos.commits(a, pathOf(params), query)))
    })
  })
)

const CredentialsHandlers = HttpApiBuilder.group(
  api,
  "credentials",
  Effect.fn(function* (handlers) {
    const keys = yield* Git.SshKeys
    const tokens = yield* Git.AccessTokens
    return handlers.handleAll({
      listKeys: () => Effect.flatMap(actor, (a) => Effect.map(keys.list(a), (items) => ({ items }))),
      addKey: ({ payload }) => Effect.flatMap(actor, (a) => keys.add(a, payload)),
      removeKey: ({ params }) => Effect.flatMap(actor, (a) => keys.remove(a, params.keyId)),
      listTokens: () => Effect.flatMap(actor, (a) => Effect.map(tokens.list(a), (items) => ({ items }))),
      createToken: ({ payload }) => Effect.flatMap(actor, (a) => Effect.map(tokens.create(a, payload), noStore)),
      revokeToken: ({ params }) => Effect.flatMap(actor, (a) => tokens.revoke(a, params.tokenId))
    })
  })
)

export const GitHandlers = Layer.mergeAll(ReposHandlers, CredentialsHandlers)
