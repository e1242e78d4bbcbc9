export * as IdentityProviderOAuth from "./identity/IdentityProviderOAuth.ts"
export * as MailTransportAuto from "./mail/MailTransportAuto.ts"
export * as MailTransportOutboxDir from "./mail/MailTransportOutboxDir.ts"
export * as MailTransportSmtp from "./mail/MailTransportSmtp.ts"
