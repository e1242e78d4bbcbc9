import { Effect, Option } from "effect"
import { Argument, Command } from "effect/cli"
import * as Path from "node:path"
import type { Counter } from "../deploy/Bundle.ts"
import { CliFailure, note, show } from "../Output.ts"
import { resolveOrg, root, type Session, session } from "../Root.ts"
import { findLink, writeLink } from "../Settings.ts"

/** A project name from a folder or manifest name, shaped to decisions.md's pattern (lowercase, digits, dashes). */
export const projectNameFrom = (raw: string): string =>
  raw
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 40)
    .replace(/-+$/g, "")

/** A hostname's address from the server's `siteUrl` (`/v1/config`), where `{host}` stands for the hostname. */
export const siteUrl = (template: string, hostname: string) => template.split("{host}").join(hostname)

/** The project a deploy goes to, created on the first deploy when it does not exist yet. */
const ensureProject = (signedIn: Session, orgSlug: string, projectName: string) =>
  signedIn.api.projects.get({ params: { orgSlug, projectName } }).pipe(
    Effect.as(false),
    Effect.catchTag("NotFound", () =>
      signedIn.api.projects.create({ params: { orgSlug }, payload: { name: projectName } as never }).pipe(
        Effect.tap((project) => note(`created project ${project.name} in ${orgSlug}`)),
        Effect.as(true)
      )
    )
  )

export const deploy = Command.make(
  "deploy",
  {
    dir: Argument.Directory("dir", { mustExist: true }).pipe(
      Argument.withDescription("The folder holding service.json, worker/ and assets/"),
      Argument.withDefault(".")
    )
  },
  Effect.fn("deploy")(function* ({ dir }) {
    const flags = yield* root
    // The bundle's code (a tar writer, core's manifest rules) loads only for a deploy.
    const { grantAddons, bundleStream, gitHeaders, scanFolder, withProgress } = yield* Effect.promise(
      () => import("../deploy/index.ts")
    )
    const signedIn = yield* session(flags)
    // Everything the server would refuse is found before a byte is sent.
    const scan = yield* scanFolder(dir)
    if (scan.skipped.length > 0) {
      yield* note(`not deployed (outside service.json, worker/, assets/): ${scan.skipped.join(", ")}`)
    }
    const link = yield* findLink(dir)
    const orgSlug = yield* resolveOrg(flags, dir, signedIn)
    const projectName = Option.isSome(flags.project)
      ? flags.project.value
      : Option.isSome(link)
        ? link.value.project
        : projectNameFrom(scan.manifest.name ?? Path.basename(scan.dir))
    if (projectName === "") {
      return yield* new CliFailure({ code: "no_project", message: "pass --project <name>: none could be derived" })
    }
    // The folder's git state before this command writes anything to it (the link below).
    const headers = yield* gitHeaders(scan.dir)
    const created = yield* ensureProject(signedIn, orgSlug, projectName)
    // The project made for this folder: the next command here needs no flags.
    const linked =
      created && Option.isNone(link) ? yield* writeLink(scan.dir, { org: orgSlug, project: projectName }) : null
    if (linked !== null) yield* note(`linked ${scan.dir} to ${orgSlug}/${projectName} (${linked})`)
    const params = { orgSlug, projectName }
    const counter: Counter = { fileBytesRead: 0, sentBytes: 0 }
    yield* note(
      `deploying ${scan.dir} to ${orgSlug}/${projectName}: ${scan.entries.length} entries, ${scan.fileBytes} bytes`
    )
    const deployment = yield* withProgress(
      signedIn.api.deployments.upload({
        params,
        headers: headers as never,
        payload: bundleStream(scan, counter)
      }),
      counter,
      scan.fileBytes,
      process.stderr.isTTY === true
    )
    const grants = yield* grantAddons({
      url: signedIn.url,
      token: signedIn.token,
      orgSlug,
      projectName,
      manifest: scan.manifest
    })
    const hostnames = yield* signedIn.api.hostnames.list({ params })
    const config = yield* signedIn.api.identity.config()
    const urls = hostnames.items.filter((h) => h.status === "active").map((h) => siteUrl(config.siteUrl, h.name))
    const failed = grants.filter((grant) => !grant.ok)
    yield* show(flags.json, { org: orgSlug, project: projectName, created, linked, deployment, urls, grants }, () => [
      `deployed ${orgSlug}/${projectName} version ${deployment.version} (${deployment.id}, ${deployment.digest})`,
      ...grants.filter((grant) => grant.ok).map((grant) => `granted ${grant.addon}`),
      ...urls.map((url) => `  ${url}`)
    ])
    if (failed.length > 0) {
      return yield* new CliFailure({
        code: failed[0]!.code ?? "grant_failed",
        message: `deployed version ${deployment.version}, but ${failed.length} add-on grant(s) failed: ${failed
          .map((grant) => `${grant.addon}: ${grant.message ?? grant.code}`)
          .join("; ")}`,
        details: { grants: failed }
      })
    }
  })
).pipe(
  Command.withDescription(
    "Upload a folder as the project's next deployment (streamed as a gzipped tar), grant the add-ons its service.json declares, and print where it is served"
  ),
  Command.withExamples([
    { command: "hostplane deploy examples/site", description: "Deploy a folder (the project is created if needed)" },
    { command: "hostplane deploy --org acme --project site ./dist", description: "Deploy to a named project" }
  ])
)
