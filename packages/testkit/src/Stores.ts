import type { Identity, Kernel, Mail, Orgs } from "@hostplane/core"

/** The five store ports a host provides to core; one adapter family (memory, PostgreSQL) provides them all. */
export type Stores = Identity.UserStore | Orgs.OrgStore | Mail.MailOutbox | Kernel.AuditLog | Kernel.Transactor
