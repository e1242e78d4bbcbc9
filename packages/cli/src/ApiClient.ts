import { apiId, apiPrefix } from "@hostplane/api/ApiPrefix"
import type { Client, ClientOptions } from "@hostplane/client"
import { Effect } from "effect"
import type { HttpClient } from "effect/http"
import { HttpApi, type HttpApiGroup } from "effect/http-api"

/** Each API group's module by the client's name for it, loaded when a command first calls one of its endpoints. */
export const groupModules: {
  readonly [Name in keyof Client]: () => Promise<HttpApiGroup.Constraint & { readonly identifier: Name }>
} = {
  identity: () => import("@hostplane/api/identity/IdentityApi").then((module) => module.IdentityApi),
  devAuth: () => import("@hostplane/api/identity/IdentityApi").then((module) => module.DevAuthApi),
  orgs: () => import("@hostplane/api/orgs/OrgsApi").then((module) => module.OrgsApi),
  members: () => import("@hostplane/api/orgs/OrgsApi").then((module) => module.MembersApi),
  invites: () => import("@hostplane/api/orgs/OrgsApi").then((module) => module.InvitesApi),
  projects: () => import("@hostplane/api/projects/ProjectsApi").then((module) => module.ProjectsApi),
  deployments: () => import("@hostplane/api/deployments/DeploymentsApi").then((module) => module.DeploymentsApi),
  secrets: () => import("@hostplane/api/secrets/SecretsApi").then((module) => module.SecretsApi),
  access: () => import("@hostplane/api/access/AccessApi").then((module) => module.AccessApi),
  hostnames: () => import("@hostplane/api/hostnames/HostnamesApi").then((module) => module.HostnamesApi),
  billingHooks: () => import("@hostplane/api/billing/BillingApi").then((module) => module.BillingHooksApi),
  billing: () => import("@hostplane/api/billing/BillingApi").then((module) => module.BillingApi),
  dns: () => import("@hostplane/api/dns/DnsApi").then((module) => module.DnsApi),
  domains: () => import("@hostplane/api/domains/DomainsApi").then((module) => module.DomainsApi),
  aiCredit: () => import("@hostplane/api/ai/AiApi").then((module) => module.AiCreditApi),
  aiGateway: () => import("@hostplane/api/ai/AiApi").then((module) => module.AiGatewayApi),
  ai: () => import("@hostplane/api/ai/AiApi").then((module) => module.AiAddonApi),
  mailHooks: () => import("@hostplane/api/email/EmailApi").then((module) => module.MailHooksApi),
  mailRelay: () => import("@hostplane/api/email/EmailApi").then((module) => module.MailRelayApi),
  email: () => import("@hostplane/api/email/EmailApi").then((module) => module.EmailAddonApi),
  auth: () => import("@hostplane/api/enduser/EndUserApi").then((module) => module.AuthAddonApi),
  storage: () => import("@hostplane/api/storage/StorageApi").then((module) => module.StorageApi),
  repos: () => import("@hostplane/api/git/GitApi").then((module) => module.ReposApi),
  credentials: () => import("@hostplane/api/git/GitApi").then((module) => module.CredentialsApi),
  database: () => import("@hostplane/api/database/DatabaseApi").then((module) => module.DatabaseApi),
  node: () => import("@hostplane/api/node/NodeApi").then((module) => module.NodeApi),
  logs: () => import("@hostplane/api/logs/LogsApi").then((module) => module.LogsApi),
  nodeLogs: () => import("@hostplane/api/logs/LogsApi").then((module) => module.NodeLogsApi)
}

type Methods = Record<string, (...args: ReadonlyArray<unknown>) => Effect.Effect<unknown, unknown>>

const isGroupName = (name: string | symbol): name is keyof Client =>
  typeof name === "string" && Object.hasOwn(groupModules, name)

/**
 * The API client, each group's part built on its first call from that group alone: a command calls one or two groups,
 * and the client of the whole API evaluated every group's schemas and walked every endpoint first (about a third of
 * the CPU of a command's start). Its calls are the full client's: same requests, schemas and errors.
 */
export const makeClient = (options: ClientOptions): Effect.Effect<Client, never, HttpClient.HttpClient> =>
  Effect.map(Effect.context<HttpClient.HttpClient>(), (context) => {
    const built = new Map<keyof Client, Methods>()
    const groupClient = (name: keyof Client): Effect.Effect<Methods> =>
      Effect.suspend(() => {
        const ready = built.get(name)
        if (ready !== undefined) return Effect.succeed(ready)
        return Effect.promise(() => Promise.all([import("@hostplane/client/ClientOf"), groupModules[name]()])).pipe(
          Effect.flatMap(([module, group]) =>
            module.makeFor(HttpApi.make(apiId).add(group).prefix(apiPrefix), options)
          ),
          Effect.map((client) => {
            const methods = (client as unknown as Record<string, Methods>)[name]!
            built.set(name, methods)
            return methods
          }),
          Effect.provideContext(context)
        )
      })
    const groups = new Map<keyof Client, Methods>()
    const group = (name: keyof Client): Methods => {
      let methods = groups.get(name)
      if (methods === undefined) {
        methods = new Proxy({} as Methods, {
          get: (_, method) =>
            typeof method === "string"
              ? (...args: ReadonlyArray<unknown>) =>
                  Effect.flatMap(groupClient(name), (client) => client[method]!(...args))
              : undefined
        })
        groups.set(name, methods)
      }
      return methods
    }
    return new Proxy({} as Client, { get: (_, name) => (isGroupName(name) ? group(name) : undefined) })
  })
