import { Effect, Option } from "effect"
import { Argument, Command, Flag, Prompt } from "effect/cli"
import { CliFailure, note, show, table } from "../Output.ts"
import { projectSession, resolveOrg, resolveProject, root, session } from "../Root.ts"
import { launchBrowser } from "../Browser.ts"
import { findLink, writeLink } from "../Settings.ts"
import { readSecretInput } from "./Input.ts"

// orgs --------------------------------------------------------------------------------------------------------

const orgsList = Command.make(
  "list",
  {},
  Effect.fn("orgs.list")(function* () {
    const flags = yield* root
    const { api } = yield* session(flags)
    const orgs = yield* api.orgs.list()
    yield* show(flags.json, orgs, () =>
      table([
        ["SLUG", "NAME", "ROLE", "PLAN", ""],
        ...orgs.items.map((org) => [org.slug, org.name, org.role, org.plan, org.personal ? "personal" : ""])
      ])
    )
  })
).pipe(Command.withDescription("List your orgs"))

const orgsCreate = Command.make(
  "create",
  {
    name: Argument.String("name").pipe(Argument.withDescription("Display name")),
    slug: Flag.String("slug").pipe(Flag.withDescription("Slug (derived from the name when absent)"), Flag.optional)
  },
  Effect.fn("orgs.create")(function* ({ name, slug }) {
    const flags = yield* root
    const { api } = yield* session(flags)
    const org = yield* api.orgs.create({
      payload: { name, ...(Option.isSome(slug) ? { slug: slug.value } : {}) } as never
    })
    yield* show(flags.json, org, () => [`created org ${org.slug} (${org.name})`])
  })
).pipe(Command.withDescription("Create an org (you become its admin)"))

export const orgs = Command.make("orgs").pipe(
  Command.withDescription("Organizations"),
  Command.withSubcommands([orgsList, orgsCreate])
)

// projects ----------------------------------------------------------------------------------------------------

const projectsList = Command.make(
  "list",
  {},
  Effect.fn("projects.list")(function* () {
    const flags = yield* root
    const signedIn = yield* session(flags)
    const orgSlug = yield* resolveOrg(flags, ".", signedIn)
    const projects = yield* signedIn.api.projects.list({ params: { orgSlug } })
    yield* show(flags.json, projects, () =>
      table([["NAME", "HOSTNAME", "CREATED"], ...projects.items.map((p) => [p.name, p.hostname, p.createdAt])])
    )
  })
).pipe(Command.withDescription("List the org's projects"))

const projectsCreate = Command.make(
  "create",
  { name: Argument.String("name").pipe(Argument.withDescription("Project name")) },
  Effect.fn("projects.create")(function* ({ name }) {
    const flags = yield* root
    const signedIn = yield* session(flags)
    const orgSlug = yield* resolveOrg(flags, ".", signedIn)
    const project = yield* signedIn.api.projects.create({ params: { orgSlug }, payload: { name } as never })
    yield* show(flags.json, project, () => [`created project ${project.name} at ${project.hostname}`])
  })
).pipe(Command.withDescription("Create a project"))

const projectArgument = Argument.String("name").pipe(Argument.withDescription("The project's name"))

/** A project named by the argument, else by `--project` or the folder's link; the org as for every command. */
const namedProject = (name: Option.Option<string>) =>
  Effect.gen(function* () {
    const flags = yield* root
    const signedIn = yield* session(flags)
    const orgSlug = yield* resolveOrg(flags, ".", signedIn)
    const params = Option.isSome(name)
      ? { orgSlug, projectName: name.value }
      : yield* resolveProject({ ...flags, org: Option.some(orgSlug) })
    return { flags, api: signedIn.api, params }
  })

const yesNo = (value: boolean) => (value ? "yes" : "no")

const projectsShow = Command.make(
  "show",
  { name: projectArgument.pipe(Argument.optional) },
  Effect.fn("projects.show")(function* ({ name }) {
    const { flags, api, params } = yield* namedProject(name)
    const overview = yield* api.projects.overview({ params })
    const serving = overview.serving
    yield* show(flags.json, overview, () => [
      `${params.orgSlug}/${overview.project.name}  ${overview.project.hostname}  (created ${overview.project.createdAt})`,
      serving === null
        ? "serving: nothing deployed yet"
        : `serving: version ${serving.deployment.version} (${serving.deployment.id}), uploaded ${serving.deployment.createdAt}${
            serving.uploader === null
              ? ""
              : ` by ${serving.uploader.name ?? serving.uploader.email ?? serving.uploader.userId}`
          }`,
      ...(overview.recentDeployments.length === 0
        ? []
        : [
            "",
            ...table([
              ["VERSION", "CREATED", "LIVE", "GIT"],
              ...overview.recentDeployments.map((d) => [
                String(d.version),
                d.createdAt,
                d.live ? "live" : "",
                d.git === null ? "" : `${(d.git.commit ?? "").slice(0, 7)} ${d.git.message ?? ""}`.trim()
              ])
            ])
          ]),
      "",
      ...table([
        ["ADD-ON", "DECLARED", "PROVISIONED"],
        ...Object.entries(overview.resources).map(([addon, state]) => [
          addon,
          yesNo(state.declared),
          yesNo(state.provisioned)
        ])
      ]),
      ...(overview.lastBackup === null
        ? []
        : [
            "",
            `last database backup: ${overview.lastBackup.createdAt} (generation ${overview.lastBackup.epoch}.${overview.lastBackup.seq})`
          ]),
      ...overview.notifications.map((n) => `notice: ${JSON.stringify(n)}`)
    ])
  })
).pipe(Command.withDescription("Show a project: what it serves, recent deployments, add-ons (default: the linked one)"))

const projectsDelete = Command.make(
  "delete",
  {
    name: projectArgument,
    yes: Flag.Boolean("yes").pipe(
      Flag.withDescription("Do not ask to type the name again (needed without a terminal)"),
      Flag.withDefault(false)
    )
  },
  Effect.fn("projects.delete")(function* ({ name, yes }) {
    const { flags, api, params } = yield* namedProject(Option.some(name))
    if (!yes) {
      if (!process.stdin.isTTY) {
        return yield* new CliFailure({
          code: "usage",
          message: `deleting ${name} cannot be undone: pass --yes to confirm without a terminal`
        })
      }
      const typed = yield* Prompt.run(
        Prompt.String({ message: `Delete ${params.orgSlug}/${name} and all its data? Type its name to confirm:` })
      ).pipe(Effect.orElseSucceed(() => ""))
      if (typed.trim() !== name) {
        return yield* new CliFailure({ code: "cancelled", message: `not deleted: the name typed was not ${name}` })
      }
    }
    const started = yield* api.projects.remove({ params, payload: { confirm: name } as never })
    yield* show(flags.json, started, () => [`deleting ${name}: operation ${started.operationId}`])
  })
).pipe(Command.withDescription("Delete a project and all its data (asks to type the name; --yes without a terminal)"))

export const projects = Command.make("projects").pipe(
  Command.withDescription("Projects of an org"),
  Command.withSubcommands([projectsList, projectsCreate, projectsShow, projectsDelete])
)

// link --------------------------------------------------------------------------------------------------------

/** On a terminal, one choice among `choices` (the only one is taken without asking). */
const choose = <A>(message: string, choices: ReadonlyArray<{ readonly title: string; readonly value: A }>) =>
  choices.length === 1
    ? Effect.succeed(choices[0]!.value)
    : Prompt.run(Prompt.Select({ message, choices })).pipe(
        Effect.mapError(() => new CliFailure({ code: "cancelled", message: "nothing linked" }))
      )

export const link = Command.make(
  "link",
  { dir: Argument.Directory("dir").pipe(Argument.withDescription("The folder to link"), Argument.withDefault(".")) },
  Effect.fn("link")(function* ({ dir }) {
    const flags = yield* root
    const signedIn = yield* session(flags)
    const existing = yield* findLink(dir)
    const named = Option.isSome(flags.project) || Option.isSome(existing)
    const interactive = process.stdin.isTTY === true && process.stdout.isTTY === true
    if (!named && !interactive) {
      return yield* new CliFailure({
        code: "usage",
        message:
          "which project? pass --project <name> (and --org <slug> unless it is your only or personal org); on a terminal `hostplane link` asks"
      })
    }
    let orgSlug: string
    let projectName: string
    if (named) {
      orgSlug = yield* resolveOrg(flags, dir, signedIn)
      projectName = (yield* resolveProject({ ...flags, org: Option.some(orgSlug) }, dir)).projectName
    } else {
      const me = yield* signedIn.api.identity.me()
      orgSlug = Option.isSome(flags.org)
        ? flags.org.value
        : yield* choose(
            "Which org?",
            me.orgs.map((org) => ({ title: `${org.slug} (${org.name})`, value: org.slug }))
          )
      const list = yield* signedIn.api.projects.list({ params: { orgSlug } })
      if (list.items.length === 0) {
        return yield* new CliFailure({
          code: "no_project",
          message: `${orgSlug} has no project yet: \`hostplane deploy\` creates one and links the folder`
        })
      }
      projectName = yield* choose(
        `Which project of ${orgSlug}?`,
        list.items.map((p) => ({ title: `${p.name} (${p.hostname})`, value: p.name }))
      )
    }
    const project = yield* signedIn.api.projects.get({ params: { orgSlug, projectName } })
    const file = yield* writeLink(dir, { org: orgSlug, project: project.name })
    yield* show(flags.json, { file, org: orgSlug, project: project.name }, () => [
      `linked ${dir} to ${orgSlug}/${project.name} (${file})`
    ])
  })
).pipe(
  Command.withDescription(
    "Write .hostplane.json so commands in this folder know the org and project (asks which on a terminal)"
  ),
  Command.withExamples([
    { command: "hostplane link", description: "Choose the org and project (on a terminal)" },
    { command: "hostplane link --org acme --project site", description: "Link this folder" }
  ])
)

// open --------------------------------------------------------------------------------------------------------

export const open = Command.make(
  "open",
  { name: projectArgument.pipe(Argument.optional) },
  Effect.fn("open")(function* ({ name }) {
    const { flags, api, params } = yield* namedProject(name)
    const hostnames = yield* api.hostnames.list({ params })
    const config = yield* api.identity.config()
    const active = hostnames.items.filter((h) => h.status === "active")
    // A verified custom hostname is what the project is known by; the default one otherwise.
    const host = active.find((h) => h.kind !== "default") ?? active.find((h) => h.kind === "default")
    if (host === undefined) {
      return yield* new CliFailure({ code: "no_hostname", message: `${params.projectName} has no active hostname` })
    }
    const url = config.siteUrl.split("{host}").join(host.name)
    yield* launchBrowser(url)
    yield* show(flags.json, { url, hostname: host.name }, () => [url])
  })
).pipe(Command.withDescription("Open the project's site in the browser (BROWSER, else the system's); prints its URL"))

// deployments and rollback ------------------------------------------------------------------------------------

export const deployments = Command.make(
  "deployments",
  { limit: Flag.Int("limit").pipe(Flag.withDescription("How many (1..200)"), Flag.withDefault(20)) },
  Effect.fn("deployments")(function* ({ limit }) {
    const { flags, api, params } = yield* projectSession
    const list = yield* api.deployments.list({ params, query: { limit } as never })
    yield* show(flags.json, list, () =>
      table([
        ["VERSION", "ID", "LIVE", "CREATED", "GIT"],
        ...list.items.map((d) => [
          String(d.version),
          d.id,
          d.live ? "live" : "",
          d.createdAt,
          d.git === null ? "" : `${(d.git.commit ?? "").slice(0, 7)} ${d.git.message ?? ""}`.trim()
        ])
      ])
    )
  })
).pipe(Command.withDescription("List the project's deployments, newest first"))

export const rollback = Command.make(
  "rollback",
  {
    version: Argument.Int("version").pipe(
      Argument.withDescription("The version to serve (default: the one before the live one)"),
      Argument.optional
    )
  },
  Effect.fn("rollback")(function* ({ version }) {
    const { flags, api, params } = yield* projectSession
    const list = yield* api.deployments.list({ params, query: { limit: 200 } as never })
    const live = list.items.find((d) => d.live)
    const target = Option.isSome(version)
      ? list.items.find((d) => d.version === version.value)
      : list.items.find((d) => live !== undefined && d.version < live.version)
    if (target === undefined) {
      return yield* new CliFailure({
        code: "not_found",
        message: Option.isSome(version)
          ? `${params.projectName} has no version ${version.value} among its latest 200 deployments`
          : `${params.projectName} has no deployment before the live one`
      })
    }
    const deployment = yield* api.deployments.rollback({ params, payload: { deploymentId: target.id } })
    yield* show(flags.json, deployment, () => [
      `${params.projectName} now serves version ${deployment.version} (${deployment.id})`
    ])
  })
).pipe(Command.withDescription("Serve an earlier deployment again (moves the live pointer; nothing is rebuilt)"))

// secrets -----------------------------------------------------------------------------------------------------

const secretsList = Command.make(
  "list",
  {},
  Effect.fn("secrets.list")(function* () {
    const { flags, api, params } = yield* projectSession
    const list = yield* api.secrets.list({ params })
    yield* show(flags.json, list, () =>
      table([["NAME", "VERSION", "UPDATED"], ...list.items.map((s) => [s.name, String(s.version), s.updatedAt])])
    )
  })
).pipe(Command.withDescription("List secret names and versions (values are never shown)"))

const secretsPut = Command.make(
  "put",
  { name: Argument.String("name").pipe(Argument.withDescription("Secret name")) },
  Effect.fn("secrets.put")(function* ({ name }) {
    const { flags, api, params } = yield* projectSession
    const value = yield* readSecretInput(`value of ${name}`)
    const meta = yield* api.secrets.put({ params: { ...params, secretName: name }, payload: { value } as never })
    yield* show(flags.json, meta, () => [`${meta.name} is at version ${meta.version}`])
  })
).pipe(
  Command.withDescription("Set a secret; the value comes from stdin or a hidden prompt, never from an argument"),
  Command.withExamples([
    { command: "hostplane secrets put API_KEY < key.txt", description: "From a file" },
    { command: "hostplane secrets put API_KEY", description: "Prompted without echo" }
  ])
)

const secretsDelete = Command.make(
  "delete",
  { name: Argument.String("name").pipe(Argument.withDescription("Secret name")) },
  Effect.fn("secrets.delete")(function* ({ name }) {
    const { flags, api, params } = yield* projectSession
    yield* api.secrets.remove({ params: { ...params, secretName: name } })
    yield* show(flags.json, { deleted: name }, () => [`deleted ${name}`])
  })
).pipe(Command.withDescription("Delete a secret"))

export const secrets = Command.make("secrets").pipe(
  Command.withDescription("Project secrets"),
  Command.withSubcommands([secretsList, secretsPut, secretsDelete])
)

// hostnames ---------------------------------------------------------------------------------------------------

interface HostnameRow {
  readonly name: string
  readonly kind: string
  readonly status: string
  readonly lastError: string | null
  readonly tls: { readonly status: string; readonly expiresAt: string | null; readonly lastError: string | null }
}

/** One line per name: its verification, then its certificate (status, expiry, the CA's last refusal). */
const hostnameRows = (items: ReadonlyArray<HostnameRow>) =>
  table([
    ["NAME", "KIND", "STATUS", "LAST ERROR", "TLS", "TLS EXPIRES", "TLS ERROR"],
    ...items.map((h) => [
      h.name,
      h.kind,
      h.status,
      h.lastError ?? "",
      h.tls.status,
      h.tls.expiresAt ?? "",
      h.tls.lastError ?? ""
    ])
  ])

const hostnamesList = Command.make(
  "list",
  {},
  Effect.fn("hostnames.list")(function* () {
    const { flags, api, params } = yield* projectSession
    const list = yield* api.hostnames.list({ params })
    yield* show(flags.json, list, () => hostnameRows(list.items))
  })
).pipe(Command.withDescription("List the project's hostnames"))

const hostnamesAdd = Command.make(
  "add",
  { name: Argument.String("hostname").pipe(Argument.withDescription("The custom hostname")) },
  Effect.fn("hostnames.add")(function* ({ name }) {
    const { flags, api, params } = yield* projectSession
    const hostname = yield* api.hostnames.add({ params, payload: { name } as never })
    yield* show(flags.json, hostname, () => [
      `${hostname.name} is ${hostname.status}`,
      ...(hostname.verify === null
        ? []
        : [
            `prove it with a TXT record: ${hostname.verify.name} = ${hostname.verify.value}`,
            `or a CNAME of ${hostname.name} to ${hostname.cname}`
          ])
    ])
  })
).pipe(Command.withDescription("Add a custom hostname (then prove it by DNS and run `hostnames verify`)"))

const hostnamesVerify = Command.make(
  "verify",
  { name: Argument.String("hostname") },
  Effect.fn("hostnames.verify")(function* ({ name }) {
    const { flags, api, params } = yield* projectSession
    const hostname = yield* api.hostnames.verify({ params: { ...params, host: name } })
    yield* show(flags.json, hostname, () => hostnameRows([hostname]))
  })
).pipe(Command.withDescription("Check a custom hostname's DNS proof now"))

const hostnamesDelete = Command.make(
  "delete",
  { name: Argument.String("hostname") },
  Effect.fn("hostnames.delete")(function* ({ name }) {
    const { flags, api, params } = yield* projectSession
    yield* api.hostnames.remove({ params: { ...params, host: name } })
    yield* show(flags.json, { deleted: name }, () => [`deleted ${name}`])
  })
).pipe(Command.withDescription("Delete a custom hostname"))

const hostnamesTlsRetry = Command.make(
  "tls-retry",
  { name: Argument.String("hostname") },
  Effect.fn("hostnames.tlsRetry")(function* ({ name }) {
    const { flags, api, params } = yield* projectSession
    const hostname = yield* api.hostnames.retryTls({ params: { ...params, host: name } })
    yield* show(flags.json, hostname, () => hostnameRows([hostname]))
  })
).pipe(Command.withDescription("Retry a hostname's failed certificate now (no change unless its TLS status is failed)"))

export const hostnames = Command.make("hostnames").pipe(
  Command.withDescription("Project hostnames"),
  Command.withSubcommands([hostnamesList, hostnamesAdd, hostnamesVerify, hostnamesDelete, hostnamesTlsRetry])
)

// access ------------------------------------------------------------------------------------------------------

const accessShow = Command.make(
  "show",
  {},
  Effect.fn("access.show")(function* () {
    const { flags, api, params } = yield* projectSession
    const policy = yield* api.access.get({ params })
    yield* show(flags.json, policy, () => [
      `mode ${policy.mode}${policy.hasPassword ? ", password set" : ""}${policy.hasBypass ? ", bypass secret set" : ""}`
    ])
  })
).pipe(Command.withDescription("Show the project's access policy"))

const accessSet = Command.make(
  "set",
  {
    mode: Argument.Literals("mode", ["public", "org", "password"]).pipe(
      Argument.withDescription("public, org (members of the org) or password (one shared password)")
    ),
    password: Flag.Boolean("password").pipe(
      Flag.withDescription("Read a new shared password from stdin or a hidden prompt"),
      Flag.withDefault(false)
    )
  },
  Effect.fn("access.set")(function* ({ mode, password }) {
    const { flags, api, params } = yield* projectSession
    const secret = password ? yield* readSecretInput("access password") : undefined
    const policy = yield* api.access.set({
      params,
      payload: { mode, ...(secret === undefined ? {} : { password: secret }) } as never
    })
    yield* show(flags.json, policy, () => [`mode ${policy.mode}${policy.hasPassword ? ", password set" : ""}`])
  })
).pipe(Command.withDescription("Set the access policy"))

const accessBypass = Command.make(
  "bypass",
  {
    revoke: Flag.Boolean("revoke").pipe(Flag.withDescription("Revoke the bypass secret"), Flag.withDefault(false))
  },
  Effect.fn("access.bypass")(function* ({ revoke }) {
    const { flags, api, params } = yield* projectSession
    if (revoke) {
      yield* api.access.revokeBypass({ params })
      return yield* show(flags.json, { revoked: true }, () => ["bypass secret revoked"])
    }
    const { body: bypass } = yield* api.access.newBypass({ params })
    yield* note("the bypass secret is shown once; send it as the Service-Access-Bypass header")
    yield* show(flags.json, bypass, () => [bypass.secret])
  })
).pipe(Command.withDescription("Issue a new bypass secret for CI (shown once), or --revoke it"))

export const access = Command.make("access").pipe(
  Command.withDescription("Who may open the project's deployments"),
  Command.withSubcommands([accessShow, accessSet, accessBypass])
)
