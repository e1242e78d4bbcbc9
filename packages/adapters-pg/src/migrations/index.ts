import createIdentityAndOrgs from "./0001_create_identity_and_orgs.ts"
import createMailOutboxAndAudit from "./0002_create_mail_outbox_and_audit.ts"

/** Every migration of this package by `<id>_<name>`; a shipped entry is never edited, only followed. */
export const migrations = {
  "0001_create_identity_and_orgs": createIdentityAndOrgs,
  "0002_create_mail_outbox_and_audit": createMailOutboxAndAudit
}
