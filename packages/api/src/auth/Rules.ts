import { Context } from "effect"
import type { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { OpenApi } from "effect/http-api"
import * as Rule from "@hostplane/core/kernel/Rule"

/**
 * The rule of an endpoint's operation: the same object its core service authorizes with. The server authorizes from
 * it before reading the endpoint's input (decisions.md part 12), and the document states the role and the refusals
 * from it.
 */
export class EndpointRule extends Context.Service<EndpointRule, Rule.Declared>()("@hostplane/api/auth/EndpointRule") {}

/** The rule an endpoint carries, if any. */
export const ruleOf = (endpoint: HttpApiEndpoint.Top): Rule.Declared | undefined =>
  Context.getOrUndefined(endpoint.annotations, EndpointRule)

type Json = Record<string, any>

const envelope = (code: string, description: string): Json => ({
  type: "object",
  description,
  properties: {
    code: { type: "string", enum: [code] },
    message: { type: "string" },
    details: { type: "object" }
  },
  required: ["code", "message"]
})

/** The refusals every ruled operation can answer, by status: what spec part 1 gives them. */
const refusals = (declared: Rule.Declared): ReadonlyArray<readonly [string, string, Json]> => {
  // A subject rule refuses as its stricter branch does, for someone else's record.
  const rule = declared._tag === "SubjectRule" ? declared.others : declared
  return [
    ["401", "Not signed in (`unauthorized`)", envelope("unauthorized", "No session, or a token that is not valid.")],
    ...(rule.minimum === "viewer"
      ? []
      : [
          [
            "403",
            "Role insufficient (`forbidden`)",
            envelope("forbidden", `The caller's role in the organization is below ${rule.minimum}.`)
          ] as const
        ]),
    [
      "404",
      "Missing or not visible (`not_found`)",
      envelope(
        "not_found",
        rule._tag === "ProjectRule"
          ? "The caller is not a member of the organization, or it has no such project."
          : "The caller is not a member of the organization, or it does not exist."
      )
    ]
  ]
}

/** The operation's role sentence and its 401, 403 and 404, written from the rule. */
const documented =
  (rule: Rule.Declared) =>
  (operation: Json): Json => {
    const description = typeof operation.description === "string" ? operation.description : ""
    operation.description = description === "" ? Rule.roleText(rule) : `${Rule.roleText(rule)} ${description}`
    operation.responses ??= {}
    for (const [status, text, schema] of refusals(rule)) {
      if (operation.responses[status] === undefined) {
        operation.responses[status] = { description: text, content: { "application/json": { schema } } }
      }
    }
    return operation
  }

/** Gives an endpoint its operation's rule (`pipe(ruled(areaRules.op))`, after its other annotations). */
export const ruled =
  (rule: Rule.Declared) =>
  <E extends HttpApiEndpoint.Constraint>(endpoint: E): E =>
    (endpoint as unknown as HttpApiEndpoint.Top)
      .annotate(EndpointRule, rule)
      .annotateMerge(OpenApi.annotations({ transform: documented(rule) })) as unknown as E

/**
 * Gives each endpoint of `group` named in `rules` (by identifier) its operation's rule; a name the group does not
 * serve is a mistake caught when the module loads.
 */
export const withRules = <G extends HttpApiGroup.Constraint>(
  group: G,
  rules: Readonly<Record<string, Rule.Declared>>
): G => {
  const endpoints = group.endpoints as unknown as Record<string, HttpApiEndpoint.Top>
  const named = Object.keys(rules).filter((identifier) => endpoints[identifier] === undefined)
  if (named.length > 0) throw new Error(`${group.identifier} serves no endpoint ${named.join(", ")}`)
  const ruledEndpoints = Object.entries(rules).map(([identifier, rule]) => ruled(rule)(endpoints[identifier]!))
  return ruledEndpoints.length === 0
    ? group
    : ((group as unknown as HttpApiGroup.Top).add(...(ruledEndpoints as [HttpApiEndpoint.Top])) as unknown as G)
}
