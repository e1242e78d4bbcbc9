import * as Core from "@hostplane/core"
import { ruleOf } from "@hostplane/api/auth/Rules"
import { Kernel } from "@hostplane/core"
import { describe, expect, it } from "vitest"
import { orgEndpoints, specRoleOf, specRolesListed } from "./support/specRoles.ts"

const { Rule } = Kernel

/** Every rule object an area of core exports (`<area>Rules`): the objects its services authorize with. */
const coreRules = new Set<Kernel.Rule.Rule>(
  Object.values(Core as Record<string, unknown>).flatMap((area) =>
    typeof area === "object" && area !== null
      ? Object.values(area as Record<string, unknown>).flatMap((rules) =>
          typeof rules === "object" && rules !== null && !Rule.isRule(rules)
            ? Object.values(rules as Record<string, unknown>).filter(Rule.isRule)
            : []
        )
      : []
  )
)

const name = (endpoint: { readonly method: string; readonly path: string }) => `${endpoint.method} ${endpoint.path}`

describe("each operation's rule, written once", () => {
  it("the spec's role table names only routes that exist", () => {
    const known = new Set(orgEndpoints.map(name))
    expect(specRolesListed.filter((route) => !known.has(route))).toEqual([])
  })

  it("an endpoint's rule is one its core area exports, with the spec's role", () => {
    const ruled = orgEndpoints.filter((endpoint) => ruleOf(endpoint) !== undefined)
    expect(ruled.length).toBeGreaterThan(10)
    for (const endpoint of ruled) {
      const rule = ruleOf(endpoint)!
      expect([name(endpoint), coreRules.has(rule)]).toEqual([name(endpoint), true])
      expect([name(endpoint), rule.minimum]).toEqual([name(endpoint), specRoleOf(endpoint.method, endpoint.path)])
      // A project's rule names the project the path names.
      expect([name(endpoint), rule._tag]).toEqual([
        name(endpoint),
        endpoint.path.includes(":projectName") ? "ProjectRule" : "OrgRule"
      ])
    }
  })

  it("the add-on endpoints each carry a rule", () => {
    const addons = orgEndpoints.filter((endpoint) =>
      /\/projects\/:projectName\/(email|ai|auth|storage)(\/|$)/.test(endpoint.path)
    )
    expect(addons.length).toBeGreaterThanOrEqual(11)
    expect(addons.filter((endpoint) => ruleOf(endpoint) === undefined).map(name)).toEqual([])
  })
})
