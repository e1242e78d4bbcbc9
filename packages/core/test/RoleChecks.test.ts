import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { Access, Kernel } from "@hostplane/core"
import { accessByHostRules } from "@hostplane/core/access/AccessPolicyRules"
import { transportRules } from "@hostplane/core/git/RepoRules"

const src = Path.resolve(import.meta.dirname, "../src")

const sources = (): Array<string> =>
  (Fs.readdirSync(src, { recursive: true, encoding: "utf8" }) as Array<string>).filter((file) => file.endsWith(".ts"))

describe("roles are compared only through exported rules", () => {
  it("no core module outside the kernel compares a role or passes a role literal to the policy", () => {
    const files = sources()
    expect(files.length).toBeGreaterThan(100)
    const kernel = new Set(["kernel/Role.ts", "kernel/Rule.ts", "kernel/Policy.ts"].map((file) => Path.normalize(file)))
    const offending = files.filter((file) => {
      if (kernel.has(Path.normalize(file))) return false
      const text = Fs.readFileSync(Path.join(src, file), "utf8")
      return /\batLeast\s*\(/.test(text) || /requireOrgRole\([^)]*"(viewer|member|admin)"/.test(text)
    })
    expect(offending).toEqual([])
  })

  it("git transport and access by hostname use their exported rules, with the spec's roles", () => {
    expect(transportRules.read.minimum).toBe("viewer")
    expect(transportRules.write.minimum).toBe("member")
    expect(accessByHostRules.authorize.minimum).toBe("viewer")
    // An org-mode deployment admits members and admins, not viewers (spec 4.11).
    expect(Access.admitsRole("org", "viewer")).toBe(false)
    expect(Access.admitsRole("org", "member")).toBe(true)
    expect(Kernel.Rule.allows(accessByHostRules.open, "admin")).toBe(true)
  })
})
