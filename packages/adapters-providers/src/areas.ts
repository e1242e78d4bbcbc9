import { AiProviders } from "./ai/AiProviders.ts"
import { BillingProviders } from "./billing/BillingProviders.ts"
import { DatabaseProviders } from "./database/DatabaseProviders.ts"
import { DomainsProviders } from "./domains/DomainsProviders.ts"
import { EmailProviders } from "./email/EmailProviders.ts"
import { EndUserProviders } from "./enduser/EndUserProviders.ts"
import { GitProviders } from "./git/GitProviders.ts"
import { IdentityProviders } from "./identity/IdentityProviders.ts"
import { MailProviders } from "./mail/MailProviders.ts"
import { StorageProviders } from "./storage/StorageProviders.ts"

/** Every area's provider adapters, in core's order. */
export const areas = [
  MailProviders,
  IdentityProviders,
  DatabaseProviders,
  EndUserProviders,
  DomainsProviders,
  BillingProviders,
  AiProviders,
  EmailProviders,
  StorageProviders,
  GitProviders
] as const
