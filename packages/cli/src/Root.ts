import type { Client } from "@hostplane/client"
import { Effect, Option, Redacted } from "effect"
import { Command, Flag } from "effect/cli"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import type { HttpClient } from "effect/http"
import { makeClient } from "./ApiClient.ts"
import { CliFailure } from "./Output.ts"
import { CliEnv, defaultUrl, findLink, readCredentials } from "./Settings.ts"

/** Flags every command takes, before or after its name. */
export const sharedFlags = {
  url: Flag.String("url").pipe(
    Flag.withDescription("The server (else HOSTPLANE_URL, else the one stored at login, else http://127.0.0.1:8080)"),
    Flag.optional
  ),
  org: Flag.String("org").pipe(
    Flag.withDescription("The org's slug (else .hostplane.json from `link`)"),
    Flag.optional
  ),
  project: Flag.String("project").pipe(
    Flag.withDescription("The project's name (else .hostplane.json from `link`)"),
    Flag.optional
  ),
  json: Flag.Boolean("json").pipe(Flag.withDescription("Print machine-readable JSON"), Flag.withDefault(false))
}

export const root = Command.make("hostplane").pipe(
  Command.withSharedFlags(sharedFlags),
  Command.withDescription("Deploy to and manage a hostplane server")
)

export type RootFlags = Command.Command.Config.Infer<typeof sharedFlags>

/** The server to talk to: `--url`, else `HOSTPLANE_URL`, else the one stored at login, else the local default. */
export const resolveUrl = (flags: RootFlags) =>
  Effect.gen(function* () {
    const env = yield* CliEnv
    if (Option.isSome(flags.url)) return flags.url.value
    if (Option.isSome(env.url)) return env.url.value
    const stored = yield* readCredentials(env.configDir)
    return Option.match(stored, { onNone: () => defaultUrl, onSome: (credentials) => credentials.url })
  }).pipe(Effect.map((url) => url.replace(/\/+$/, "").replace(/\/v1$/, "")))

/** The token: `HOSTPLANE_TOKEN` (CI), else the one `login` stored for this server. */
const resolveToken = (url: string) =>
  Effect.gen(function* () {
    const env = yield* CliEnv
    if (Option.isSome(env.token)) return Option.some(Redacted.value(env.token.value))
    const stored = yield* readCredentials(env.configDir)
    return Option.flatMap(stored, (credentials) =>
      credentials.url === url ? Option.some(credentials.token) : Option.none()
    )
  })

export interface Session {
  readonly url: string
  readonly token: string
  readonly api: Client
}

/**
 * The CLI's HTTP client: `node:http`, whose request stream keeps a bundle upload's memory flat (the `fetch` client's
 * resident memory grew with the bundle's size in `bench/deploy.ts`).
 */
export const httpClient = NodeHttpClient.layerNodeHttp

/** A client without a token, for the calls that need none (dev login, `/v1/config`). */
export const anonymous = (url: string): Effect.Effect<Client, never, HttpClient.HttpClient> =>
  makeClient({ baseUrl: url })

/** A client signed in to the resolved server; `not_logged_in` when there is no token for it. */
export const session = (flags: RootFlags): Effect.Effect<Session, CliFailure, CliEnv | HttpClient.HttpClient> =>
  Effect.gen(function* () {
    const url = yield* resolveUrl(flags)
    const token = yield* resolveToken(url)
    if (Option.isNone(token)) {
      return yield* new CliFailure({
        code: "not_logged_in",
        message: `not signed in to ${url}: run \`hostplane login\` (or set HOSTPLANE_TOKEN)`
      })
    }
    const api = yield* makeClient({ baseUrl: url, token: token.value })
    return { url, token: token.value, api }
  })

/** The org: `--org`, else `.hostplane.json`, else the caller's only or personal org (when `fallback` is given). */
export const resolveOrg = (flags: RootFlags, from: string, fallback?: Session) =>
  Effect.gen(function* () {
    if (Option.isSome(flags.org)) return flags.org.value
    const link = yield* findLink(from)
    if (Option.isSome(link)) return link.value.org
    if (fallback !== undefined) {
      const me = yield* fallback.api.identity.me()
      const only = me.orgs.length === 1 ? me.orgs[0] : me.orgs.find((org) => org.personal)
      if (only !== undefined) return only.slug
    }
    return yield* new CliFailure({
      code: "no_org",
      message: "which org? pass --org <slug> or run `hostplane link --org <slug> --project <name>`"
    })
  })

/** The org and project: flags, else `.hostplane.json` (searched from `from` upwards). */
export const resolveProject = (flags: RootFlags, from = ".") =>
  Effect.gen(function* () {
    const link = yield* findLink(from)
    const org = Option.isSome(flags.org) ? Option.some(flags.org.value) : Option.map(link, (l) => l.org)
    const project = Option.isSome(flags.project) ? Option.some(flags.project.value) : Option.map(link, (l) => l.project)
    if (Option.isNone(org) || Option.isNone(project)) {
      return yield* new CliFailure({
        code: "no_project",
        message: "which project? pass --org <slug> --project <name> or run `hostplane link` in this folder"
      })
    }
    return { orgSlug: org.value, projectName: project.value }
  })

/** The signed-in client and the project the flags or `.hostplane.json` name. */
export const projectSession = Effect.gen(function* () {
  const flags = yield* root
  const signedIn = yield* session(flags)
  const params = yield* resolveProject(flags)
  return { flags, ...signedIn, params }
})
