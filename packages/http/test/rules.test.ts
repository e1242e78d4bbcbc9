import * as Core from "@hostplane/core"
import { ruleOf } from "@hostplane/api/auth/Rules"
import { Kernel } from "@hostplane/core"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { orgEndpoints, specRoleOf, specRolesListed } from "./support/specRoles.ts"

const { Rule } = Kernel

/** Every rule an area of core exports (`<area>Rules`): the objects its services authorize with. */
const coreRules = new Set<Kernel.Rule.Declared>(
  Object.values(Core as Record<string, unknown>).flatMap((area) =>
    typeof area === "object" && area !== null
      ? Object.values(area as Record<string, unknown>).flatMap((rules) =>
          typeof rules === "object" && rules !== null && !Rule.isDeclared(rules)
            ? Object.values(rules as Record<string, unknown>).filter(Rule.isDeclared)
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

  it("every endpoint under an org carries its operation's rule", () => {
    // Read from the API definition: an endpoint added under /v1/orgs/:orgSlug without a rule fails here.
    expect(orgEndpoints.length).toBeGreaterThan(100)
    expect(orgEndpoints.filter((endpoint) => ruleOf(endpoint) === undefined).map(name)).toEqual([])
  })

  it("an endpoint's rule is one its core area exports, with the spec's role", () => {
    for (const endpoint of orgEndpoints) {
      const declared = ruleOf(endpoint)!
      expect([name(endpoint), coreRules.has(declared)]).toEqual([name(endpoint), true])
      // A subject rule is the spec's role for another's record, and any member for the caller's own.
      const rule = declared._tag === "SubjectRule" ? declared.others : declared
      if (declared._tag === "SubjectRule") {
        expect([name(endpoint), declared.self.minimum]).toEqual([name(endpoint), "viewer"])
        expect(endpoint.path).toContain(`:${declared.param}`)
      }
      expect([name(endpoint), rule.minimum]).toEqual([name(endpoint), specRoleOf(endpoint.method, endpoint.path)])
      // A project's rule names the project the path names.
      expect([name(endpoint), rule._tag]).toEqual([
        name(endpoint),
        endpoint.path.includes(":projectName") ? "ProjectRule" : "OrgRule"
      ])
    }
  })

  it("a subject rule's branch is picked by whether the path names the caller", () => {
    const leave = Rule.org("viewer")
    const removeOther = Rule.org("admin")
    const remove = Rule.bySubject("userId", { self: leave, others: removeOther })
    expect(Rule.forSubject(remove, true)).toBe(leave)
    expect(Rule.forSubject(remove, false)).toBe(removeOther)
    expect(Rule.roleText(remove)).toBe("Admin; viewer or higher when `{userId}` is the caller.")
  })

  it("no role name is written in the HTTP package's source: roles are read from the rules", () => {
    const root = Path.join(import.meta.dirname, "..", "src")
    const files = (Fs.readdirSync(root, { recursive: true }) as Array<string>)
      .filter((file) => /\.(ts|tsx|js|html|css)$/.test(file))
      .map((file) => Path.join(root, file))
    expect(files.length).toBeGreaterThan(50)
    const quoted = new RegExp(`["'\`](${Kernel.Role.literals.join("|")})["'\`]`)
    const found = files.flatMap((file) =>
      Fs.readFileSync(file, "utf8")
        .split("\n")
        .flatMap((line, index) =>
          quoted.test(line) ? [`${Path.relative(root, file)}:${index + 1}: ${line.trim()}`] : []
        )
    )
    expect(found).toEqual([])
  })
})
