import { type Identity, Kernel, type Mail, Orgs, Projects } from "@hostplane/core"
import { Effect } from "effect"

/** 20 random lowercase hex characters: ids and slugs no other test (or test run) on a shared database uses. */
export const randomSuffix = (): string => globalThis.crypto.randomUUID().replaceAll("-", "").slice(0, 20)

/** A fresh id; the id kinds of decisions.md come back branded (`uniqueId("prj")` is a `ProjectId`). */
export function uniqueId<P extends Kernel.IdPrefix>(prefix: P): Kernel.IdOf<P>
export function uniqueId(prefix: string): string
export function uniqueId(prefix: string): string {
  return `${prefix}_${randomSuffix()}`
}

/** A valid org slug (`^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$`) unique to the caller. */
export const uniqueSlug = (): string => `t-${randomSuffix()}`

export const iso = (ms: number): string => new Date(ms).toISOString()

/** A fixed instant well inside the range every store keeps exactly (millisecond precision, UTC). */
export const t0 = Date.UTC(2031, 0, 1)

export const at = (offsetMs: number): string => iso(t0 + offsetMs)

export const minute = 60_000
export const day = 24 * 60 * minute

export const makeUser = (overrides: Partial<Identity.User> = {}): Identity.User => {
  const suffix = randomSuffix()
  return {
    id: Kernel.makeId("usr", `usr_${suffix}`),
    provider: "contract",
    subject: `subject-${suffix}`,
    email: `user-${suffix}@example.test`,
    name: `User ${suffix}`,
    ...overrides
  }
}

export const makeOrg = (overrides: Partial<Orgs.OrgRow> = {}): Orgs.OrgRow => ({
  id: uniqueId("org"),
  slug: uniqueSlug(),
  name: "Contract Org",
  plan: "free",
  personal: false,
  createdAt: at(0),
  ...overrides
})

/** A project row of `orgId` named uniquely, with its default hostname under a test app domain. */
export const makeProject = (orgId: Kernel.OrgId, overrides: Partial<Projects.ProjectRow> = {}): Projects.ProjectRow => {
  const name = overrides.name ?? `p-${randomSuffix()}`
  return {
    id: uniqueId("prj"),
    orgId,
    name,
    hostname: `${name}.apps.contract.test`,
    createdAt: at(0),
    liveDeploymentId: null,
    deletingSince: null,
    ...overrides
  }
}

/** A new project (with its default hostname) in a new org. */
export const givenProject = Effect.gen(function* () {
  const org = makeOrg()
  yield* (yield* Orgs.OrgStore).insert(org)
  const row = makeProject(org.id)
  yield* (yield* Projects.ProjectStore).insert(row)
  return row
}).pipe(Effect.orDie)

export const makeInvite = (
  orgId: Kernel.OrgId,
  overrides: Partial<Omit<Orgs.InviteRow, "sentAt">> = {}
): Omit<Orgs.InviteRow, "sentAt"> => {
  const suffix = randomSuffix()
  return {
    id: Kernel.makeId("inv", `inv_${suffix}`),
    orgId,
    email: `invitee-${suffix}@example.test`,
    role: "member",
    tokenHash: `hash-${suffix}`,
    state: "pending",
    expiresAt: at(7 * day),
    mailId: null,
    createdAt: at(0),
    ...overrides
  }
}

export const makeMessage = (overrides: Partial<Mail.MailMessage> = {}): Mail.MailMessage => {
  const suffix = randomSuffix()
  return {
    id: `mail_${suffix}`,
    from: "hostplane <no-reply@example.test>",
    to: `rcpt-${suffix}@example.test`,
    subject: `Subject ${suffix}`,
    text: `Body ${suffix}\nsecond line`,
    ...overrides
  }
}

export const makeNotification = (
  orgId: string,
  overrides: Partial<Orgs.NotificationRow> = {}
): Orgs.NotificationRow => ({
  id: uniqueId("ntf"),
  orgId,
  kind: "limit",
  message: "project limit reached",
  projectName: null,
  createdAt: at(0),
  mailId: null,
  ...overrides
})
