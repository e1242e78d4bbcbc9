import { Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { show, table } from "../Output.ts"
import { projectSession } from "../Root.ts"

const repoName = Argument.String("repo").pipe(Argument.withDescription("The repository's name"))

const list = Command.make(
  "list",
  {},
  Effect.fn("repos.list")(function* () {
    const { flags, api, params } = yield* projectSession
    const repos = yield* api.repos.list({ params })
    yield* show(flags.json, repos, () =>
      table([
        ["NAME", "VISIBILITY", "BRANCH", "CLONE"],
        ...repos.items.map((r) => [r.name, r.visibility, r.defaultBranch, r.cloneUrl])
      ])
    )
  })
).pipe(Command.withDescription("List the project's git repositories"))

const create = Command.make(
  "create",
  {
    name: repoName,
    visibility: Flag.Literals("visibility", ["private", "public"]).pipe(Flag.optional),
    branch: Flag.String("default-branch").pipe(Flag.optional)
  },
  Effect.fn("repos.create")(function* ({ name, visibility, branch }) {
    const { flags, api, params } = yield* projectSession
    const repo = yield* api.repos.create({
      params,
      payload: {
        name,
        ...(Option.isSome(visibility) ? { visibility: visibility.value } : {}),
        ...(Option.isSome(branch) ? { defaultBranch: branch.value } : {})
      } as never
    })
    yield* show(flags.json, repo, () => [
      `created ${repo.name}`,
      `  git clone ${repo.cloneUrl}`,
      `  git clone ${repo.sshUrl}`
    ])
  })
).pipe(Command.withDescription("Create a git repository"))

const get = Command.make(
  "show",
  { name: repoName },
  Effect.fn("repos.show")(function* ({ name }) {
    const { flags, api, params } = yield* projectSession
    const repo = yield* api.repos.get({ params: { ...params, repoName: name } })
    const refs = yield* api.repos.refs({ params: { ...params, repoName: name } })
    yield* show(flags.json, { ...repo, refs }, () => [
      `${repo.name} (${repo.visibility}, default branch ${repo.defaultBranch}, deploy on push ${repo.deployOnPush ? "on" : "off"})`,
      `clone: ${repo.cloneUrl}  or  ${repo.sshUrl}`,
      ...refs.branches.map((b) => `  branch ${b.name}  ${b.commit.slice(0, 12)}`),
      ...refs.tags.map((t) => `  tag ${t.name}  ${t.commit.slice(0, 12)}`)
    ])
  })
).pipe(Command.withDescription("Show a repository with its branches and tags"))

const commits = Command.make(
  "commits",
  {
    name: repoName,
    ref: Flag.String("ref").pipe(Flag.optional),
    limit: Flag.Int("limit").pipe(Flag.withDefault(20))
  },
  Effect.fn("repos.commits")(function* ({ name, ref, limit }) {
    const { flags, api, params } = yield* projectSession
    const list = yield* api.repos.commits({
      params: { ...params, repoName: name },
      query: { limit, ...(Option.isSome(ref) ? { ref: ref.value } : {}) } as never
    })
    yield* show(flags.json, list, () =>
      list.items.map((c) => `${c.sha.slice(0, 12)}  ${c.author.date}  ${c.message.split("\n")[0] ?? ""}`)
    )
  })
).pipe(Command.withDescription("List a repository's commits, newest first"))

const update = Command.make(
  "update",
  {
    name: repoName,
    rename: Flag.String("name").pipe(Flag.withDescription("A new name for the repository"), Flag.optional),
    visibility: Flag.Literals("visibility", ["private", "public"]).pipe(
      Flag.withDescription("public: anyone may clone it; private: the org's members only"),
      Flag.optional
    ),
    branch: Flag.String("default-branch").pipe(
      Flag.withDescription("The branch a clone checks out and deploy on push follows"),
      Flag.optional
    ),
    deployOnPush: Flag.Literals("deploy-on-push", ["on", "off"]).pipe(
      Flag.withDescription("on: every push that moves the default branch deploys its tree"),
      Flag.optional
    )
  },
  Effect.fn("repos.update")(function* ({ name, rename, visibility, branch, deployOnPush }) {
    const { flags, api, params } = yield* projectSession
    const payload = {
      ...(Option.isSome(rename) ? { name: rename.value } : {}),
      ...(Option.isSome(visibility) ? { visibility: visibility.value } : {}),
      ...(Option.isSome(branch) ? { defaultBranch: branch.value } : {}),
      ...(Option.isSome(deployOnPush) ? { deployOnPush: deployOnPush.value === "on" } : {})
    }
    yield* api.repos.update({ params: { ...params, repoName: name }, payload })
    const repo = yield* api.repos.get({ params: { ...params, repoName: payload.name ?? name } })
    yield* show(flags.json, repo, () => [
      `updated ${repo.name} (${repo.visibility}, default branch ${repo.defaultBranch}, deploy on push ${repo.deployOnPush ? "on" : "off"})`
    ])
  })
).pipe(Command.withDescription("Change a repository's name, visibility, default branch or deploy on push (admin)"))

const remove = Command.make(
  "delete",
  { name: repoName },
  Effect.fn("repos.delete")(function* ({ name }) {
    const { flags, api, params } = yield* projectSession
    yield* api.repos.remove({ params: { ...params, repoName: name } })
    yield* show(flags.json, { deleted: name }, () => [`deleted ${name}`])
  })
).pipe(Command.withDescription("Delete a repository (removed from disk after the retention period)"))

export const repos = Command.make("repos").pipe(
  Command.withDescription("The project's git repositories (spec 4.12)"),
  Command.withSubcommands([list, create, get, update, commits, remove])
)
