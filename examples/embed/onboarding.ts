import { type Kernel, Orgs, Projects } from "@hostplane/core"
import { Effect } from "effect"

/**
 * The host's own code that calls hostplane (what a team tests with `TestHostplane`): when a customer signs up, their
 * team gets an org with a first project, and the teammates they name are invited (hostplane mails the invites).
 */
export const onboard = Effect.fn("onboard")(function* (
  actor: Kernel.Actor,
  team: { readonly name: string; readonly teammates: ReadonlyArray<string> }
) {
  const orgs = yield* Orgs.Orgs
  const projects = yield* Projects.Projects
  const invites = yield* Orgs.Invites
  const org = yield* orgs.create(actor, { name: team.name })
  const project = yield* projects.create(actor, org.slug, "website")
  for (const email of team.teammates) yield* invites.create(actor, org.slug, { email, role: "member" })
  return { org: org.slug, project: project.name }
})
