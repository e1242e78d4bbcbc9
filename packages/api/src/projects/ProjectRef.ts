import { Orgs } from "@hostplane/core"
import { Schema } from "effect"

/**
 * A name in a path, documented with decisions.md's pattern. A name outside it cannot exist, so it is not refused
 * here: it answers 404 like any unknown name, as the spec lists for these routes.
 */
const name = (what: string) => Schema.String.annotate({ description: `The ${what} (\`${Orgs.slugPattern.source}\`).` })

/** `{orgSlug}`: the path parameter of every org-scoped route. */
export const OrgRef = { orgSlug: name("organization's slug") }

/** `{orgSlug}/projects/{projectName}`: the path parameters of every project-scoped route. */
export const ProjectRef = { ...OrgRef, projectName: name("project's name") }
